"""High-precision references for tests/statistics/xiao_xiong.rs (near-collinear histories).

Run once with `python3 tests/refs/blue_mpmath.py` (mpmath 1.3, 60 significant digits) and
paste the printed constants. Every coefficient, epsilon and answer is the exact decimal the
test gives; S is the largest absolute coefficient of the row (Lemma 2.1). For each history:
A = diag(eps ./ S) H, M = A'A (eq. 50), kappa = sigma_max(A) / sigma_min(A); for each query q:
v = M^-1 q', the BLUE's weights a_i = (eps_i/S_i)^2 h_i v (eq. 51), value = a . y and variance
2 q M^-1 q' (eq. 52).
"""
from mpmath import mp, mpf, matrix, svd_r

mp.dps = 60


def blue(rows, eps, ys, queries):
    n = len(rows[0])
    h = matrix([[mpf(c) for c in r] for r in rows])
    s = [max(abs(mpf(c)) for c in r) for r in rows]
    scale = [mpf(e) / si for e, si in zip(eps, s)]
    a = matrix(len(rows), n)
    for i in range(len(rows)):
        for j in range(n):
            a[i, j] = scale[i] * h[i, j]
    sv = svd_r(a, compute_uv=False)
    kappa = max(sv) / min(sv)
    minv = (a.T * a) ** -1
    out = []
    for q in queries:
        qv = matrix([mpf(c) for c in q])
        v = minv * qv
        weights = [scale[i] ** 2 * sum(h[i, j] * v[j] for j in range(n)) for i in range(len(rows))]
        value = sum(w * mpf(y) for w, y in zip(weights, ys))
        var = 2 * (qv.T * v)[0]
        out.append((value, var))
    return kappa, out


def show(name, rows, eps, ys, queries):
    kappa, out = blue(rows, eps, ys, queries)
    print(f"// {name}: kappa = {mp.nstr(kappa, 17)}")
    for q, (value, var) in zip(queries, out):
        print(f"//   q = {q}: value {mp.nstr(value, 17)}, variance {mp.nstr(var, 17)}")


show("brief 1", [["1", "1"], ["1", "1.0000001"]], ["0.5", "0.5"], ["5", "6"],
     [["1", "0"], ["0", "1"], ["1", "1"]])
show("brief 2", [["10000", "10001"], ["10001", "10002"]], ["0.5", "0.5"], ["30000", "40000"],
     [["1", "0"], ["0", "1"], ["1", "1"]])
for delta in ["0.04", "0.0004", "0.000004", "0.00000004", "0.0000000004"]:
    show(f"sweep {delta}",
         [["1", "1", "0", "0"], ["1", "1." + delta[2:], "0", "0"], ["0", "0", "1", "0"],
          ["0", "0", "1", "1"], ["0", "0", "0", "2"]],
         ["0.5", "0.5", "0.1", "0.3", "0.2"], ["30.8", "31.2", "20.2", "55.1", "40.4"],
         [["1", "0", "0", "0"], ["1", "1", "0", "0"], ["0", "1", "1", "0"], ["0", "0", "0", "1"]])
show("stiff", [["1", "1", "0"], ["1", "-1", "0"], ["0", "0", "1"], ["1", "1", "1"]],
     ["1", "0.000001", "0.5", "0.7"], ["12.5", "-3.25", "30", "17"],
     [["1", "0", "0"], ["0", "1", "0"], ["1", "1", "1"]])
