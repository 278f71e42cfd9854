import re,glob
for N in (4,8):
  for mode in ("probed","given"):
    for run in (1,2):
      f=f"docs/results/cost_model/probe_once_2026-12-01/reuse_N{N}_{mode}_{run}.txt"
      try: lines=open(f).read().splitlines()
      except FileNotFoundError: continue
      firsts=[l for l in lines if "auto chose" in l and "sparsifier of 1048576" in l]
      pc=[]; pr=[]
      for l in firsts:
        m=re.search(r"probe ([0-9.]+), calibration ([0-9.]+)\)",l); pc.append(float(m.group(1))+float(m.group(2))); pr.append(float(m.group(1)))
      later=[l for l in lines if "auto chose" in l and "sparsifier of 1048576" not in l]
      lc=[float(re.search(r"; ([0-9.]+) ms to choose",l).group(1)) for l in later]
      setups=[re.search(r"at (\d+) elements.*creation ([0-9.]+) ms",l).groups() for l in lines if l.startswith("# setup")]
      chose=re.search(r"auto chose (\w+)",firsts[0]).group(1) if firsts else "-"
      print(f"N={N} {mode} run {run}: ranks {len(firsts)}, first sparsifier probe max {max(pr):.1f} ms, probe+cal slowest {max(pc):.1f} ms; later ones' ms to choose max {max(lc):.1f}; creation (slowest) "+", ".join(f"{int(c)//1048576}M {float(t):.1f}" for c,t in setups)+f"; chose {chose}")
