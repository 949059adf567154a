#!/usr/bin/python3
"""fit_exp.py: fits the polynomial of the kernels' inline expf (simd/body/exp_body.h).

The inline exp reduces x = n ln2 + r with n = round(x / ln2), so
|r| <= ln2/2 (plus 6.2e-6 for n taken from x * fl(log2 e) at |x| <= 104),
and evaluates exp(r) = 1 + r + r^2 Q(r), Q of degree 4 (c2..c6). The leading
1 + r is exact, so only Q is fitted: a minimax fit of the relative error of
1 + r + r^2 Q(r) against exp(r), by Lawson's iteration (weighted least
squares whose weights grow where the error is largest) on a dense grid in
double. The coefficients are then rounded to fp32 one at a time, lowest
degree first, refitting the higher ones around each rounded value so they
absorb its rounding.

Run it (numpy only) to print the C constants and the error: the fp32
constants in exp_body.h are what it prints. Degree 4 gives about 2e-9
relative (0.03 ulp at worst); degree 3 would give about 8e-8 (over 1 ulp).
"""
import math

import numpy as np

R = np.log(2) / 2 + 6.2e-6  # |r| bound, see above
DEG = 4                      # degree of Q: c2 .. c6
GRID = 40001


def grid():
    # Chebyshev-distributed points (dense near the ends, where minimax errors peak)
    t = np.cos(np.pi * (np.arange(GRID) + 0.5) / GRID)
    return np.sort(R * t)


def design(r, first):
    # columns r^2 r^k for k = first .. DEG (coefficients c_{k+2})
    return np.stack([r * r * r ** k for k in range(first, DEG + 1)], axis=1)


def fit(r, fixed):
    """Minimax in relative error for the free coefficients, with fixed[k]
    (c_{k+2}, k < len(fixed)) held at the given values."""
    e = np.exp(r)
    target = e - 1 - r
    for k, c in enumerate(fixed):
        target = target - c * r * r * r ** k
    A = design(r, len(fixed)) / e[:, None]
    b = target / e
    w = np.ones_like(r)
    for _ in range(200):
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(A * sw[:, None], b * sw, rcond=None)
        err = np.abs(A @ coef - b)
        w = w * err
        w = w / w.sum()
    return coef


def rel_err(r, c):
    p = 1 + r + r * r * np.polyval(c[::-1], r)
    return np.max(np.abs(p / np.exp(r) - 1))


def f32_eval(r, c):
    """The kernels' evaluation order in fp32, Horner down to the constant:
    1 + r (1 + r (c2 + r (c3 + ...))), each step one FMA (rounded once: its
    product of two floats is exact in double, so one fp32 rounding of the
    double sum is the FMA's up to rare double roundings). The last FMA's
    rounding (0.5 ulp) and r times the rounding of 1 + r Q (|r| / 2 ulp of
    a value near 1) dominate; the reduction's rounding of r adds up to
    |r| / 2 ulp(r) relative."""
    f = np.float32
    r = r.astype(f)
    q = np.full_like(r, f(c[-1]))
    for ck in list(c[-2::-1]) + [1.0, 1.0]:
        q = (q.astype(np.float64) * r + f(ck)).astype(f)
    return q


def main():
    r = grid()
    c_double = fit(r, [])
    fixed = []
    for k in range(DEG + 1):
        free = fit(r, fixed)
        fixed.append(float(np.float32(free[0])))
    print(f"|r| <= {R:.9f}; Q of degree {DEG}")
    print(f"minimax in double: max relative error {rel_err(r, c_double):.3e}")
    print(f"fp32 coefficients: max relative error {rel_err(r, np.array(fixed)):.3e} "
          f"(= {rel_err(r, np.array(fixed)) / 2**-24:.4f} u)")
    p = f32_eval(r, fixed).astype(np.float64)
    e = np.exp(r.astype(np.float32).astype(np.float64))
    ulp = np.where(e < 1, 2.0**-24, 2.0**-23)
    print(f"fp32 evaluation at fp32 r: max error {np.max(np.abs(p - e) / ulp):.4f} ulp")
    for k, c in enumerate(fixed):
        print(f"    c{k + 2} = {float.hex(c).replace('0000000p', 'p')}f  /* {c:.9g} (1/{k + 2}! = {1 / math.factorial(k + 2):.9g}) */")


if __name__ == "__main__":
    main()
