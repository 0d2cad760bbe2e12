// `wick bench`: times the ops on the shapes of /work/shared/ANCHORS.md (see bench.cpp for the rules).
#pragma once

namespace wick::tool {

// argv holds the options after "bench"; returns the process exit code.
int cmd_bench(int argc, char** argv);

}  // namespace wick::tool
