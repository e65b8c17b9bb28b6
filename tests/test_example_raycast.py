"""The raycast example: its pixels against a NumPy ray tracer over every triangle."""

import numpy as np

import weft as wp
from weft.examples import raycast


def _closest_hits(orig, dirs, tri):
    """Brute-force closest hits (Moller-Trumbore): t (inf for a miss) and the face normal."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    e1, e2 = b - a, c - a
    t_best = np.full(len(dirs), np.inf)
    n_best = np.zeros((len(dirs), 3))
    for k, d in enumerate(dirs):
        p = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, p)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        s = orig - a
        u = np.einsum("ij,ij->i", s, p) * inv
        q = np.cross(s, e1)
        v = (q @ d) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
        if hit.any():
            j = np.argmin(np.where(hit, t, np.inf))
            t_best[k] = t[j]
            n = np.cross(e1[j], e2[j])
            n_best[k] = n / np.linalg.norm(n)
    return t_best, n_best


def test_raycast_pixels_match_brute_force(tmp_path):
    res = 48
    points, tris = raycast.bumpy_sphere_on_ground(24)
    image = raycast.main(["--side", "24", "--res", str(res), "--out", str(tmp_path)])
    assert (tmp_path / "raycast.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tri = points.astype(np.float64)[tris]
    eye = np.array([2.2, 1.6, 4.4])
    forward = -eye / np.linalg.norm(eye)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    light = np.array([0.5, 0.8, 0.35]) / np.linalg.norm([0.5, 0.8, 0.35])
    rng = np.random.default_rng(7)
    pix = rng.choice(res * res, 60, replace=False)
    px, py = pix % res + 0.5, pix // res + 0.5
    x, y = (2.0 * px / res - 1.0) * 0.364, (1.0 - 2.0 * py / res) * 0.364
    dirs = forward + x[:, None] * right + y[:, None] * up
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    t, n = _closest_hits(eye, dirs, tri)
    got = image.reshape(-1, 3)[pix]
    hits = np.isfinite(t)
    assert hits.sum() > 10 and (~hits).sum() > 5  # the view shows both the mesh and the sky
    sky = np.array([0.62, 0.72, 0.85]) * (0.75 + 0.25 * y / 0.364)[:, None]
    np.testing.assert_allclose(got[~hits], sky[~hits], rtol=1e-4, atol=1e-5)
    for k in np.nonzero(hits)[0]:
        p = eye + t[k] * dirs[k]
        nk = -n[k] if n[k] @ dirs[k] > 0 else n[k]
        lit = max(nk @ light, 0.0)
        if lit > 0:
            ts, _ = _closest_hits(p + 1e-3 * nk, light[None], tri)
            lit = 0.0 if np.isfinite(ts[0]) else lit
        albedo = np.array([0.7, 0.7, 0.7]) if p[1] < -0.999 else np.array([0.8, 0.55, 0.35])
        np.testing.assert_allclose(got[k], albedo * (0.15 + 0.85 * lit), rtol=2e-3, atol=2e-3)
