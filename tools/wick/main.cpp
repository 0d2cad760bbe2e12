// The `wick` command line tool.
//   wick devices                 lists the devices present
//   wick check [--device D] [--op NAME] [--json] [--verbose]
//                                the conformance matrix: every op x dtype on every device present
//   wick inspect | convert | load  model files (files.cpp)
//   wick run | bench-model        language models (llm.cpp)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench.h"
#include "check/harness.h"
#include "files.h"
#include "wick/tensor.h"
#include "wick/version.h"

namespace {

using namespace wick;
using namespace wick::check;

int usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: wick <command> [options]   (wick --version: the version and backends)\n"
               "  devices                       list the devices present (name, memory, architecture)\n"
               "  check [options]               run every op x dtype on every device against the reference\n"
               "      --device D                only device D (cpu, cuda, cuda:1, rocm, ...)\n"
               "      --op NAME                 only op NAME (may be repeated)\n"
               "      --json                    print JSON instead of a table\n"
               "      --verbose                 print every failure message\n"
               "  bench [options]               time the ops on the ANCHORS.md shapes (wick bench --help)\n"
               "  inspect FILE [--json]         format, metadata and tensors of a .gguf, .safetensors, .npy, .npz\n"
               "  convert IN OUT [--dtype D | --quant FORMAT]\n"
               "                                between GGUF, safetensors and .npz, casting or quantizing\n"
               "  load FILE [--device D]        load every tensor of FILE to D and print the rate\n"
               "  run MODEL -p PROMPT [...]     generate text with a GGUF or Hugging Face model (wick run --help)\n"
               "  bench-model MODEL [...]       prefill and decode tokens/s (wick bench-model --help)\n"
               "exit status: 0 success, 1 a check failed, 2 bad arguments, 3 an error while running\n");
  return code;
}

const char* kCheckUsage =
    "usage: wick check [--device D]... [--op NAME]... [--json] [--verbose]\n"
    "  runs every op x dtype x layout on each device against the reference (f64 on the CPU, the CPU\n"
    "  backend on a GPU) and prints the matrix, then 'N passed, M failed, K unsupported'\n"
    "  --device D   only device D (cpu, cuda, cuda:1, rocm, ...; may be repeated)\n"
    "  --op NAME    only op NAME (may be repeated)\n"
    "  --json       print JSON instead of a table\n"
    "  --verbose    print the message of every unsupported cell too\n"
    "exit status: 0 every cell passed, 1 a cell failed, 2 bad arguments\n";

// A bad argument of `wick <cmd>`: the message, the command's usage, exit status 2.
int bad_argument(const char* cmd, const std::string& what, const char* cmd_usage) {
  std::fprintf(stderr, "wick %s: %s\n%s", cmd, what.c_str(), cmd_usage);
  return 2;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

int cmd_devices(int argc, char** argv) {
  static const char* kUsage = "usage: wick devices\n  lists the devices present (name, memory, architecture)\n";
  if (argc > 0) {
    if (std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return bad_argument("devices", std::string("unexpected argument '") + argv[0] + "'", kUsage);
  }
  for (const Device& d : available_devices()) {
    const DeviceInfo i = d.info();
    std::printf("%-8s %s\n", d.location().c_str(), i.name.c_str());
    std::printf("         architecture %s, %d %s, memory %s total, %s free", i.architecture.c_str(), i.multiprocessors,
                d.is_cpu() ? "threads" : "multiprocessors", gib(i.total_memory).c_str(), gib(i.free_memory).c_str());
    if (i.warp_size) std::printf(", warp size %d", i.warp_size);
    std::printf(", bf16 %s\n", d.supports_bf16() ? "yes" : "no");
  }
  return 0;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}

struct Cell {
  Status status = Status::NotApplicable;
  std::string message;  // first failure
};

int cmd_check(int argc, char** argv) {
  std::vector<Device> devices;
  std::vector<Op> ops;
  bool json = false, verbose = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kCheckUsage, stdout);
      return 0;
    }
    if ((a == "--device" || a == "--op") && i + 1 >= argc)
      return bad_argument("check", "option " + a + " needs a value", kCheckUsage);
    if (a == "--device") {
      Device d;
      try {
        d = Device::parse(argv[++i]);
      } catch (const Error& e) {
        return bad_argument("check", e.what(), kCheckUsage);
      }
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    } else if (a == "--op") {
      Op op;
      if (!parse_op(argv[++i], &op))
        return bad_argument("check", std::string("unknown op '") + argv[i] + "'", kCheckUsage);
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--verbose" || a == "-v") {
      verbose = true;
    } else {
      return bad_argument("check", "unknown option '" + a + "'", kCheckUsage);
    }
  }
  if (devices.empty()) devices = available_devices();
  if (ops.empty())
    for (const OpInfo& info : kOpTable) ops.push_back(info.op);

  int passed = 0, failed = 0, unsupported = 0;
  std::ostringstream js;
  js << "{\"results\": [";
  bool first_js = true;
  for (const Device& dev : devices) {
    if (!json) {
      std::printf("\n%s  %s\n", dev.location().c_str(), dev.info().name.c_str());
      std::printf("%-20s", "op");
      for (DType dt : kAllDTypes) std::printf("%-8s", std::string(dtype_name(dt)).c_str());
      std::printf("\n");
    }
    std::vector<std::string> messages;
    for (Op op : ops) {
      Cell cells[kNumDTypes];
      bool any_case = false;
      for (const Case& c : all_cases()) {
        if (c.op != op) continue;
        any_case = true;
        for (int k = 0; k < kNumDTypes; ++k) {
          const DType dt = kAllDTypes[k];
          for (LayoutKind lk : kLayoutKinds) {
            const Outcome o = run_case(c, dev, dt, lk);
            Cell& cell = cells[k];
            if (o.status == Status::NotApplicable) continue;
            // Fail outranks Unsupported outranks Pass.
            if (o.status == Status::Fail && cell.status != Status::Fail) {
              cell.status = Status::Fail;
              cell.message =
                  std::string(layout_name(lk)) + (c.variant.empty() ? "" : " " + c.variant) + ": " + o.message;
            } else if (o.status == Status::Unsupported && cell.status != Status::Fail) {
              if (cell.status != Status::Unsupported) cell.message = o.message;
              cell.status = Status::Unsupported;
            } else if (o.status == Status::Pass && cell.status == Status::NotApplicable) {
              cell.status = Status::Pass;
            }
          }
        }
      }
      if (!json) std::printf("%-20s", std::string(op_name(op)).c_str());
      for (int k = 0; k < kNumDTypes; ++k) {
        const DType dt = kAllDTypes[k];
        Cell& cell = cells[k];
        if (!any_case && op_defined_for(op, dt)) {
          cell.status = Status::Fail;
          cell.message = "no conformance case";
        }
        const char* mark = "-";
        switch (cell.status) {
          case Status::Pass:
            ++passed;
            mark = "ok";
            break;
          case Status::Fail:
            ++failed;
            mark = "FAIL";
            break;
          case Status::Unsupported:
            ++unsupported;
            mark = "unsup";
            break;
          case Status::NotApplicable:
            break;
        }
        if (!json) std::printf("%-8s", mark);
        if (cell.status == Status::Fail || (verbose && cell.status == Status::Unsupported))
          messages.push_back(std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + ": " + cell.message);
        if (json && cell.status != Status::NotApplicable) {
          static const char* names[] = {"pass", "fail", "unsupported", "n/a"};
          js << (first_js ? "" : ",") << "\n  {\"device\": \"" << dev.location() << "\", \"op\": \"" << op_name(op)
             << "\", \"dtype\": \"" << dtype_name(dt) << "\", \"status\": \"" << names[static_cast<int>(cell.status)]
             << "\", \"message\": \"" << json_escape(cell.message) << "\"}";
          first_js = false;
        }
      }
      if (!json) std::printf("\n");
    }
    if (!json && !messages.empty()) {
      std::printf("\n");
      for (const std::string& m : messages) std::printf("  %s\n", m.c_str());
    }
  }
  if (json) {
    js << "\n], \"passed\": " << passed << ", \"failed\": " << failed << ", \"unsupported\": " << unsupported << "}\n";
    std::fputs(js.str().c_str(), stdout);
  } else {
    std::printf("\n%d passed, %d failed, %d unsupported\n", passed, failed, unsupported);
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line where stdout is a pipe or a file too, so that a long `wick check` shows progress.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) return usage(2);
  const std::string cmd = argv[1];
  try {
    if (cmd == "devices") return cmd_devices(argc - 2, argv + 2);
    if (cmd == "check") return cmd_check(argc - 2, argv + 2);
    if (cmd == "bench") return wick::tool::cmd_bench(argc - 2, argv + 2);
    if (cmd == "inspect") return wick::tool::cmd_inspect(argc - 2, argv + 2);
    if (cmd == "convert") return wick::tool::cmd_convert(argc - 2, argv + 2);
    if (cmd == "load") return wick::tool::cmd_load(argc - 2, argv + 2);
    if (cmd == "run") return wick::tool::cmd_run(argc - 2, argv + 2);
    if (cmd == "bench-model") return wick::tool::cmd_bench_model(argc - 2, argv + 2);
    if (cmd == "--help" || cmd == "-h" || cmd == "help") return usage(0);
    if (cmd == "--version") {
      std::printf("wick %s (backends: cpu%s%s)\n", WICK_VERSION_STRING, WICK_HAS_CUDA ? ", cuda" : "",
                  WICK_HAS_ROCM ? ", rocm" : "");
      return 0;
    }
  } catch (const wick::Error& e) {
    std::fprintf(stderr, "wick %s: %s\n", cmd.c_str(), e.what());
    return 3;
  }
  std::fprintf(stderr, "wick: unknown command '%s'\n", cmd.c_str());
  return usage(2);
}
