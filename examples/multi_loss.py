"""Theorem 7, one network and three losses: run ``PYTHONPATH=. python3 examples/multi_loss.py``."""
from condcheck.multiloss import multi_loss_example, report

if __name__ == "__main__":
    ex = multi_loss_example()
    print(report(ex))
    raise SystemExit(0 if ex["ok"] else 1)
