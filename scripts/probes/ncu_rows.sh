#!/usr/bin/env bash
# The kernels behind benchmark rows, wick's and torch's, under Nsight Compute: for each row's op,
# every kernel each side launched while timing it (input making and the timer's lead excluded by
# name), with its grid, block, registers, duration and DRAM traffic. For rows whose device time is
# far from the sum of their kernels (host round trips, gaps between kernels) or kernels far from
# the copy rate.
#
#   scripts/probes/ncu_rows.sh BUILD_DIR OUT_DIR [bench options: --llm, --op NAME ...]
#
# Needs ncu and, for torch's side, python3 with torch. Three timed runs per row (--reps 3).
set -euo pipefail
build=$1 out=$2
shift 2
mkdir -p "$out"
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,launch__grid_size,launch__block_size,launch__registers_per_thread
metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
prof=(ncu --csv --print-units base --metrics "$metrics")
"${prof[@]}" "$build/wick" bench --device cuda --reps 3 "$@" >"$out/ncu-wick.csv" 2>"$out/ncu-wick.log" || true
"${prof[@]}" python3 bench/peers/torch_bench.py --device cuda --reps 3 "$@" \
  >"$out/ncu-torch.csv" 2>"$out/ncu-torch.log" || true
python3 - "$out/ncu-wick.csv" "$out/ncu-torch.csv" <<'PY'
import collections, csv, io, sys
skip = ("rand", "philox", "curand", "uniform", "normal", "distribution", "fill", "elementwise_kernel_with_index")
for path in sys.argv[1:]:
    text = open(path).read()
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
    launches = collections.OrderedDict()  # launch ID -> its metrics
    for r in rows:
        value = r["Metric Value"].replace(",", "")
        launches.setdefault(r["ID"], {"name": r["Kernel Name"][:90]})[r["Metric Name"]] = value
    # One line per kernel and launch shape (the rows of one op launch the same kernel on other grids).
    k = collections.OrderedDict()
    for l in launches.values():
        key = (l["name"], l.get("launch__grid_size", "?"), l.get("launch__block_size", "?"))
        for metric, value in l.items():
            if metric != "name":
                k.setdefault(key, {}).setdefault(metric, []).append(value)
    print(f"== {path}: {len(rows)} metric rows")
    for (name, g, b), m in k.items():
        if any(s in name.lower() for s in skip):
            continue
        t = sorted(float(x) for x in m.get("gpu__time_duration.sum", ["nan"]))
        rd = sorted(float(x) for x in m.get("dram__bytes_read.sum", ["nan"]))
        wr = sorted(float(x) for x in m.get("dram__bytes_write.sum", ["nan"]))
        reg = m.get("launch__registers_per_thread", ["?"])[0]
        occ = sorted(float(x) for x in m.get("sm__warps_active.avg.pct_of_peak_sustained_active", ["nan"]))
        bw = sorted(float(x) for x in m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", ["nan"]))
        print(f"{len(t):3d}x  med {t[len(t)//2]/1e3:9.2f} us  min {t[0]/1e3:9.2f}  rd {rd[len(rd)//2]/1e6:8.2f} MB"
              f"  wr {wr[len(wr)//2]/1e6:8.2f} MB  dram {bw[len(bw)//2]:5.1f}%  occupancy {occ[len(occ)//2]:5.1f}%"
              f"  grid {g:>7} block {b:>5} reg {reg:>4}  {name}")
PY
