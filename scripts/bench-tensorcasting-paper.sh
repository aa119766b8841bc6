#!/usr/bin/env bash
# Tensor Casting's evaluation (Sec. VI), modeled (docs/benchmarks-tensorcasting.md):
# the four systems (graphs/tensorcasting-baseline-cpu.yaml = Baseline(CPU),
# tensorcasting.yaml = Ours(CPU), tensorcasting-baseline-nmp.yaml =
# Baseline(NMP), tensorcasting-nmp.yaml = Ours(NMP)) for RM1–RM4 (Table II,
# dim 64) at batch 1024, 2048 and 4096 (Sec. V), on the paper profile
# (Xeon E5-2698 v4 with ScratchPipe's calibrated factors, V100, Table I's
# NMP pool at the rate the paper's emulation sustained, profile emulated).
# Variants (VARIANTS): calibrated (the graphs as shipped), table1 (the pool
# at Ramulator's 600 GB/s, devices.nmp.options.profile=table1; the CPU
# systems have no pool, so their calibrated figures stand for them),
# datasheet (every device at its datasheet or design figure: the host at
# its peak, devices.host.options.peak=true, the bound of a tuned CPU
# software, and the pool at 600 GB/s; Ours(NMP) has no host, so its table1
# figures stand for it) and step15 (ScratchPipe's calibrated 15 ms
# training-step overhead on the GPU, which the Tensor Casting graphs leave
# at 0: docs/devices.md, "Calibration").
#
# Reduced for a small shared VM: 4 training batches, no held-out batches,
# 100 000 rows per table (the paper does not give table sizes), and
# learning rates of 0.01 (at the graphs' rate of 10 RM1 and RM2 diverge).
# The modeled time per batch depends on the batch's lookups, unique rows,
# bytes and FLOPs, not on the number of batches; rows per table change the
# unique rows (zipf 1.05, the graphs' locality).
#
#   scripts/bench-tensorcasting-paper.sh [OUT]        # run the sweep, then print the table
#   scripts/bench-tensorcasting-paper.sh table [OUT]  # print the table of OUT's runs
#
# Environment: RMS (default "rm1 rm2 rm3 rm4"), SIZES ("1024 2048 4096"),
# VARIANTS ("calibrated table1 datasheet"), FLOWRUN (a flowrun binary; default:
# build bin/flowrun). Writes OUT/RM-bSIZE.json and OUT/RM-bSIZE-VARIANT.json
# for the others (flowrun bench --json; flowrun report draws them).
set -euo pipefail
cd "$(dirname "$0")/.."

table() {
	python3 - "$1" <<'EOF'
import glob, json, os, re, statistics, sys

out = sys.argv[1]
systems = [("tensorcasting-baseline-cpu", "Baseline(CPU)"), ("tensorcasting", "Ours(CPU)"),
           ("tensorcasting-baseline-nmp", "Baseline(NMP)"), ("tensorcasting-nmp", "Ours(NMP)")]
# rows[(variant, rm, batch)][graph] = figures, all modeled ms per batch
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    m = re.fullmatch(r"(rm\d)-b(\d+)(?:-(datasheet|table1|step15))?(?:-nmp)?\.json", os.path.basename(path))
    if not m:
        continue
    rm, batch, variant = m[1], int(m[2]), m[3] or "calibrated"
    rep = json.load(open(path))
    for run in rep["runs"]:
        if run.get("error"):
            print(f"{path}: {run['graph']}: {run['error']}", file=sys.stderr)
            continue
        res = run["results"]
        prims = {p["stage"]: p for p in res.get("primitives", [])}
        tr, ca = prims.get("train", {}), prims.get("cast", {})
        n = tr.get("batches") or 1
        ms = lambda p, k: p.get("modeled_ms", {}).get(k, 0.0) / (p.get("batches") or 1)
        it = run["iteration_ms"]["modeled"]
        step = ms(tr, "step")
        nmp = tr.get("modeled_device_busy_ms", {}).get("nmp", 0.0) / n
        rows.setdefault((variant, rm, batch), {})[run["graph"]] = {
            "it": it, "gather": ms(tr, "gather"), "backward": ms(tr, "backward"),
            "cast": ms(ca, "cast"), "cast_copy": ms(ca, "transfer"), "scatter": ms(tr, "scatter"),
            "mlp": ms(tr, "mlp"), "step": step, "transfer": ms(tr, "transfer"),
            "nmp_util": nmp / it if nmp else None,
        }
# A variant runs only the graphs it changes and takes the others' figures
# from the variant they equal: Baseline(CPU) and Ours(CPU) name no pool, so
# with the table1 pool theirs are the calibrated ones; Ours(NMP) names no
# host, so on the datasheet its figures are table1's.
borrow = {"table1": ("calibrated",), "datasheet": ("table1",), "step15": ()}
for (variant, rm, batch), g in rows.items():
    for other in borrow.get(variant, ()):
        for graph, fig in rows.get((other, rm, batch), {}).items():
            g.setdefault(graph, fig)

def f(x, d=2):
    return "–" if x is None or x == 0 else f"{x:.{d}f}"

titles = {"calibrated": "the graphs as shipped (calibrated host, emulated pool)",
          "table1": "pool at Ramulator's 600 GB/s (profile table1), calibrated host",
          "datasheet": "every device at its datasheet or design figure (host peak, pool at 600 GB/s)",
          "step15": "with a 15 ms training-step overhead on the GPU"}
for variant in ("calibrated", "table1", "datasheet", "step15"):
    keys = sorted(k for k in rows if k[0] == variant)
    if not keys:
        continue
    print(f"\n### {titles[variant]}: modeled ms per batch\n")
    step = any(r.get("step") for k in keys for r in rows[k].values())
    print("| model | batch | system | iteration | speedup | gather | backward | cast (gpu) | index copies | scatter | mlp |"
          + (" step |" if step else "") + " transfer | NMP util. |")
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if step else "") + "---|---|")
    speed = {s: [] for _, s in systems}
    util = {}
    fig12 = []
    for _, rm, batch in keys:
        g = rows[(variant, rm, batch)]
        base = g.get("tensorcasting-baseline-cpu")
        for graph, name in systems:
            r = g.get(graph)
            if r is None:
                continue
            sp = base["it"] / r["it"] if base else None
            if sp:
                speed[name].append((rm, batch, sp))
            if r["nmp_util"] is not None:
                util.setdefault(name, []).append((rm, batch, r["nmp_util"]))
            print(f"| {rm.upper()} | {batch} | {name} | {f(r['it'])} | {f(sp)}× | {f(r['gather'])} | {f(r['backward'])} | "
                  f"{f(r['cast'])} | {f(r['cast_copy'])} | {f(r['scatter'])} | {f(r['mlp'])} | "
                  + (f"{f(r['step'])} | " if step else "") + f"{f(r['transfer'])} | "
                  f"{f(100 * r['nmp_util'], 1) + ' %' if r['nmp_util'] is not None else '–'} |")
        if base:
            for graph in ("tensorcasting", "tensorcasting-nmp"):
                r = g.get(graph)
                if r:
                    fig12.append((rm, batch, graph, base["backward"] / (r["cast"] + r["backward"])))
    print(f"\n### {titles[variant]}: summary (modeled)\n")
    # The averages are over the paper's default batch sizes (Sec. V); larger
    # ones (Sec. VI-D) are listed per batch only.
    default = {1024, 2048, 4096}
    print("Over batch 1024, 2048 and 4096 (the paper's defaults); other batch sizes per batch only.\n")
    fig12 = [x for x in fig12 if x[1] in default]
    for name in ("Ours(CPU)", "Baseline(NMP)", "Ours(NMP)"):
        v = [s for _, b, s in speed[name] if b in default]
        if v:
            print(f"- {name} over Baseline(CPU): {min(v):.2f}–{max(v):.2f}×, mean {statistics.mean(v):.2f}×, "
                  f"geomean {statistics.geometric_mean(v):.2f}× ({len(v)} points)")
            for b in sorted({b for _, b, _ in speed[name]}):
                w = [s for _, bb, s in speed[name] if bb == b]
                print(f"  - batch {b}: {min(w):.2f}–{max(w):.2f}×, mean {statistics.mean(w):.2f}×")
    oc = {(rm, b): s for rm, b, s in speed["Ours(CPU)"] if b in default}
    bn = {(rm, b): s for rm, b, s in speed["Baseline(NMP)"] if b in default}
    v = [oc[k] / bn[k] for k in oc if k in bn]
    if v:
        print(f"- Ours(CPU) over Baseline(NMP): {min(v):.2f}–{max(v):.2f}×, mean {statistics.mean(v):.2f}×")
    for name, u in util.items():
        for group in (("rm1", "rm2"), ("rm3", "rm4")):
            w = [x for rm, b, x in u if rm in group and b in default]
            if w:
                print(f"- {name} NMP utilisation, {'/'.join(g.upper() for g in group)}: mean {100 * statistics.mean(w):.1f} % "
                      f"({100 * min(w):.1f}–{100 * max(w):.1f} %)")
    for graph, name in (("tensorcasting", "Ours(CPU)"), ("tensorcasting-nmp", "Ours(NMP)")):
        w = [x for _, _, g, x in fig12 if g == graph]
        if w:
            print(f"- Fig. 12 right axis, expand-coalesce / (cast + casted gather-reduce), {name}: {min(w):.2f}–{max(w):.2f}×")
    if variant == "table1":
        # The pool's fit (docs/devices.md, profile emulated): the factor f by
        # which the pool's time must grow for Baseline(NMP) to keep it busy
        # Fig. 15's 6.5 % on RM1/RM2: f·N / (f·N + rest) = 0.065.
        fit = []
        for k in keys:
            r = rows[k].get("tensorcasting-baseline-nmp")
            if k[1] in ("rm1", "rm2") and r and r["nmp_util"]:
                n = r["nmp_util"] * r["it"]
                fit.append(f"{k[1].upper()}/{k[2]} {0.065 / 0.935 * (r['it'] - n) / n:.2f}")
        if fit:
            print(f"- pool fit, f for Baseline(NMP) busy 6.5 % on RM1/RM2: {', '.join(fit)}")
    # Sec. VI-A: the pool's casted gather-reduce against the host's.
    w = [rows[k]["tensorcasting"]["backward"] / rows[k]["tensorcasting-nmp"]["backward"] for k in keys
         if k[2] in default and {"tensorcasting", "tensorcasting-nmp"} <= rows[k].keys()]
    if w:
        print(f"- casted gather-reduce, Ours(CPU) / Ours(NMP): {min(w):.2f}–{max(w):.2f}×")
EOF
}

if [[ ${1:-} == table ]]; then
	table "${2:-bench-out/tensorcasting-paper}"
	exit
fi
out=${1:-bench-out/tensorcasting-paper}
# flowrun as the tree is now, unless FLOWRUN names a binary.
flowrun=${FLOWRUN:-bin/flowrun}
[[ -n ${FLOWRUN:-} ]] || go build -o "$flowrun" ./cmd/flowrun
mkdir -p "$out"
read -r -a rms <<<"${RMS:-rm1 rm2 rm3 rm4}"
read -r -a sizes <<<"${SIZES:-1024 2048 4096}"
read -r -a variants <<<"${VARIANTS:-calibrated table1 datasheet}"
common=(--set dataset.rows=100000 --set dataset.batches=4 --set dataset.eval_batches=0
	--set stages.train.learning_rate=0.01 --set model.options.learning_rate=0.01 --set dataset.dim=64)
for rm in "${rms[@]}"; do
	# Table II: tables and gathers per table; the MLPs are the preset's.
	case $rm in
	rm1) shape=(--set dataset.tables=10 --set dataset.lookups=80) ;;
	rm2) shape=(--set dataset.tables=40 --set dataset.lookups=80) ;;
	rm3 | rm4) shape=(--set dataset.tables=10 --set dataset.lookups=20) ;;
	*) echo "unknown model $rm" >&2; exit 2 ;;
	esac
	for b in "${sizes[@]}"; do
		P=(--set model.options.preset="$rm" "${shape[@]}" "${common[@]}" --set dataset.batch_size="$b")
		for v in "${variants[@]}"; do
			echo "== $rm batch $b $v" >&2
			graphs=(graphs/tensorcasting-baseline-cpu.yaml graphs/tensorcasting.yaml
				graphs/tensorcasting-baseline-nmp.yaml graphs/tensorcasting-nmp.yaml)
			case $v in
			calibrated) V=() suffix= ;;
			table1) V=(--set devices.nmp.options.profile=table1) suffix=-table1 graphs=("${graphs[@]:2:2}") ;;
			datasheet)
				# Baseline(NMP) has both a host and a pool: its own run.
				"$flowrun" bench "${graphs[2]}" "${P[@]}" --set devices.host.options.peak=true \
					--set devices.nmp.options.profile=table1 --json --out "$out/$rm-b$b-datasheet-nmp.json" >/dev/null
				V=(--set devices.host.options.peak=true) suffix=-datasheet graphs=("${graphs[@]:0:2}") ;;
			step15) V=(--set devices.gpu.options.op_overhead_ms.train-step=15) suffix=-step15 ;;
			*) echo "unknown variant $v" >&2; exit 2 ;;
			esac
			"$flowrun" bench "${graphs[@]}" "${P[@]}" "${V[@]}" --json --out "$out/$rm-b$b$suffix.json" >/dev/null
		done
	done
done
table "$out"
