"""The BLUE of benches/blue.rs in scipy, on the very history the bench wrote, for comparison.

`cargo bench --bench blue` writes its 4000 x 2000 history to the system's temporary directory
(`dpq-blue-history.txt`); this script reads it and times what a user of numpy and scipy would
write: the sparse formation of M = H'WH (scipy.sparse), LAPACK's Cholesky of the dense M
(scipy.linalg.cho_factor, OpenBLAS's dpotrf) and one estimate (eq. 50-52: v = M^-1 q, the
weights a = W H v, the value a . y and the variance 2 q v). dpq's `Blue::new` + `estimate`
also certify the factorisation (a condition estimate, LAPACK's dpocon scheme) and refine the
weights once (a second solve on the residual of A H = Q); `--checked` adds the same two steps
here (dpocon and a second cho_solve), so that both sides do the same work. It prints the
median and the fastest of the rounds, and the value and variance so they can be compared
with dpq's.

    python3 benches/peers_blue.py [--threads 1] [--rounds 10] [--checked] [FILE]

OpenBLAS runs on one thread unless told otherwise, as dpq's bench does (one core).
"""
import argparse
import os
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("file", nargs="?", default=os.path.join(tempfile.gettempdir(), "dpq-blue-history.txt"))
parser.add_argument("--threads", default="1")
parser.add_argument("--rounds", type=int, default=10)
parser.add_argument("--checked", action="store_true",
                    help="also estimate the condition number (dpocon) and refine once, as dpq does")
args = parser.parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = args.threads

import numpy as np  # noqa: E402  (after the thread settings)
import scipy.linalg  # noqa: E402
import scipy.sparse  # noqa: E402


def read(path):
    """cells, (rows, cols, vals) of H, alpha / S, y, and the query q."""
    with open(path) as f:
        cells, m = map(int, f.readline().split())
        q = np.array([float(x) for x in f.readline().split()])
        rows, cols, vals, s, y = [], [], [], [], []
        for i in range(m):
            fields = f.readline().split()
            eps, sens, noisy, k = float(fields[0]), float(fields[1]), float(fields[2]), int(fields[3])
            for j in range(k):
                rows.append(i)
                cols.append(int(fields[4 + 2 * j]))
                vals.append(float(fields[5 + 2 * j]))
            s.append(eps / sens)
            y.append(noisy)
    h = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(m, cells))
    return h, np.array(s), np.array(y), q


def blue(h, s, y, q, checked):
    w = scipy.sparse.diags(s * s)
    m = (h.T @ w @ h).toarray()
    if checked:
        norm = scipy.linalg.norm(m, 1)
    c = scipy.linalg.cho_factor(m, lower=True, check_finite=False)
    if checked:
        rcond, info = scipy.linalg.lapack.dpocon(c[0], norm, uplo="L")
        assert info == 0 and rcond > 1e-6, (rcond, info)
    v = scipy.linalg.cho_solve(c, q, check_finite=False)
    a = (s * s) * (h @ v)
    if checked:
        # One step of refinement on A H = Q, as dpq's estimate takes.
        v += scipy.linalg.cho_solve(c, q - h.T @ a, check_finite=False)
        a = (s * s) * (h @ v)
    return a @ y, 2.0 * q @ v


def main():
    if not os.path.exists(args.file):
        sys.exit(f"{args.file}: run `cargo bench --bench blue` first, it writes the history")
    h, s, y, q = read(args.file)
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        value, variance = blue(h, s, y, q, args.checked)
        times.append(time.perf_counter() - start)
    times.sort()
    checked = ", with dpocon and one refinement" if args.checked else ""
    print(f"scipy {scipy.__version__} / numpy {np.__version__}, {args.threads} thread(s){checked}: "
          f"{h.shape[0]} x {h.shape[1]}, {h.nnz} non-zeros")
    print(f"median {times[len(times) // 2] * 1e3:.1f} ms, fastest {times[0] * 1e3:.1f} ms "
          f"over {args.rounds} rounds; value {value:.12g}, variance {variance:.12g}")


main()
