#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang-14, ASan + UBSan) against a regular build's
# libwick.a and runs each for a bounded time from a seed corpus made by the test tools (every
# handcrafted bad and valid file of tests/io). Any crash, leak, sanitizer report or exception
# other than wick::Error fails the run (libFuzzer exits non-zero and leaves crash-* files).
#
# usage: scripts/fuzz.sh BUILD_DIR [SECONDS_PER_TARGET] [JOBS]
#   BUILD_DIR holds libwick.a and tests/wick_io_gguf, tests/wick_io_st, tests/llm/llm_make (built
#   before).
#   JOBS > 1 runs that many fuzzing processes per target (libFuzzer -fork).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "$1")
seconds=${2:-60}
jobs=${3:-1}
out=$build/fuzz
mkdir -p "$out"

if ! command -v clang++-14 >/dev/null 2>&1 || [ ! -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev
fi

cmake -S fuzz -B "$out/build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DWICK_BUILD="$build" >/dev/null
cmake --build "$out/build"

# Seeds: the handcrafted corpus (bad files and their valid twins) and the sample files.
rm -rf "$out/seeds"
mkdir -p "$out/seeds/gguf" "$out/seeds/safetensors" "$out/seeds/npy" "$out/seeds/tokenizer"
"$build/tests/wick_io_gguf" corpus "$out/seeds/gguf" >/dev/null
"$build/tests/wick_io_st" corpus "$out/seeds/st_all" >/dev/null
cp "$out"/seeds/st_all/safetensors/* "$out/seeds/safetensors/"
cp "$out"/seeds/st_all/npy/* "$out"/seeds/st_all/npz/* "$out/seeds/npy/"
# Tokenizer seeds: texts for both vocabularies (first byte 0 or 1) and tokenizer.json files (2).
printf '\000 Hello the thing, 123 \303\251t\303\251 <s>\n' >"$out/seeds/tokenizer/spm"
printf '\001The thing 12345 \303\251 <|eot_id|> x\n\t  ' >"$out/seeds/tokenizer/bpe"
for a in llama2 llama3 qwen2; do
  "$build/tests/llm/llm_make" "$out/seeds/model_$a" --arch "$a" --format f32 >/dev/null
  { printf '\002'; cat "$out/seeds/model_$a/hf/tokenizer.json"; } >"$out/seeds/tokenizer/$a.json"
done

status=0
for t in gguf safetensors npy tokenizer; do
  corpus=$out/corpus/$t
  mkdir -p "$corpus"
  echo "--- fuzz_$t: ${seconds} s, $(find "$out/seeds/$t" -type f | wc -l) seeds"
  args=(-max_total_time="$seconds" -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=20 -print_final_stats=1
        -artifact_prefix="$out/$t-")
  [ "$jobs" -gt 1 ] && args+=(-fork="$jobs")
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "$out/build/fuzz_$t" "${args[@]}" "$corpus" "$out/seeds/$t" \
        > "$out/fuzz_$t.log" 2>&1); then
    echo "fuzz_$t found a problem:" >&2
    tail -n 60 "$out/fuzz_$t.log" >&2
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|^#[0-9]+.*DONE" "$out/fuzz_$t.log" | tail -n 3 || true
done
exit $status
