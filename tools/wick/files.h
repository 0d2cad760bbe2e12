// `wick inspect`, `wick convert`, `wick load`: model files from the command line (files.cpp).
#pragma once

namespace wick::tool {

// argv holds the options after the command; each returns the process exit code.
int cmd_inspect(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_load(int argc, char** argv);

}  // namespace wick::tool
