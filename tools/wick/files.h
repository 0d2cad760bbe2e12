// `wick inspect`, `wick convert`, `wick load` (files.cpp) and `wick run`, `wick bench-model`
// (llm.cpp): model files from the command line.
#pragma once

namespace wick::tool {

// argv holds the options after the command; each returns the process exit code.
int cmd_inspect(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_load(int argc, char** argv);
// `wick run`, `wick bench-model` (llm.cpp).
int cmd_run(int argc, char** argv);
int cmd_bench_model(int argc, char** argv);

}  // namespace wick::tool
