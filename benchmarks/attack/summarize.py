"""Per strategy: mean score, share >= 0.5, share == 1, by read/write; and the tasks it scored on.

python benchmarks/attack/summarize.py EVAL_PARENT TASKS.jsonl [STRATEGY...]
"""

import json
import sys
from pathlib import Path


def main() -> None:
    """Print the table, then up to 6 tasks with score >= 0.5 per strategy."""
    parent, tasks_file, *names = sys.argv[1:]
    tasks = {t["id"]: t for t in map(json.loads, open(tasks_file))}
    names = names or sorted(
        p.name for p in Path(parent).iterdir() if (p / "results.jsonl").exists()
    )
    print(
        f"{'strategy':20} {'n':>4} {'mean':>6} {'>=0.5':>6} {'==1':>6} | "
        f"{'read mean':>9} {'write mean':>10}"
    )
    examples = {}
    for s in names:
        f = Path(parent) / s / "results.jsonl"
        if not f.exists():
            continue
        rs = [json.loads(x) for x in open(f)]
        sc = [(r, r["score"] if r["score"] is not None else 0.0) for r in rs]
        n = len(sc)
        mean = sum(v for _, v in sc) / n
        half = sum(v >= 0.5 for _, v in sc) / n
        one = sum(v == 1 for _, v in sc) / n
        rd = [v for r, v in sc if not tasks[r["task_id"]]["outcome"]["mutates"]]
        wr = [v for r, v in sc if tasks[r["task_id"]]["outcome"]["mutates"]]
        print(
            f"{s:20} {n:4} {mean:6.3f} {half:6.2f} {one:6.2f} | "
            f"{sum(rd) / max(1, len(rd)):9.3f} {sum(wr) / max(1, len(wr)):10.3f}"
        )
        examples[s] = [(r, v) for r, v in sc if v > 0]
    for s, ex in examples.items():
        if not ex:
            continue
        print(f"\n== {s}: {len(ex)} tasks scored > 0")
        for r, v in sorted(ex, key=lambda x: -x[1])[:8]:
            t = tasks[r["task_id"]]
            print(
                f"  {r['task_id']} {v:.3f} [{t['env_id']}, "
                f"{'write' if t['outcome']['mutates'] else 'read'}] {t['request'][:110]!r}"
            )


if __name__ == "__main__":
    main()
