"""Scatter and stencil workloads: a particle-to-grid transfer, an FEM force assembly and a 3-D
stencil, forward on a tape and backward; written against the Warp API like workloads.py, which
lists them in its SECTIONS.

- p2g: 256k particles each add their mass and momentum to the 8 nodes of their cell of a 64^3
  grid (trilinear weights), vec3 and scalar atomics; the loss is the grid's weighted momentum.
- FEM: 98k linear tetrahedra of a 24^3-cell block (6 per cell), each computes its deformation
  gradient and Neo-Hookean first Piola stress and adds its 4 nodal forces (vec3 atomics); the loss
  is a weighted sum of the forces, differentiated with respect to the node positions.
- stencil: 7-point Laplacian smoothing of a 128^3 float32 field, 4 steps (one array per step).
"""

# No `from __future__ import annotations`: kernel annotations must be evaluated where `wp` is bound.
import numpy as np

ROWS = (
    "p2g 256k particles fwd, taped",
    "p2g backward",
    "fem assembly 98k tets fwd, taped",
    "fem assembly backward",
    "stencil 128^3 x4 fwd, taped",
    "stencil backward",
)

P2G_PARTICLES = 256 * 1024
P2G_GRID = 64
FEM_CELLS = 24
STENCIL = 128
STENCIL_STEPS = 4


def _scatter_kernels(wp):
    G = wp.constant(P2G_GRID)

    @wp.kernel
    def p2g(
        x: wp.array(dtype=wp.vec3),
        v: wp.array(dtype=wp.vec3),
        m: wp.array(dtype=float),
        grid_m: wp.array3d(dtype=float),
        grid_mv: wp.array3d(dtype=wp.vec3),
    ):
        p = wp.tid()
        g = x[p] * float(G - 1)
        i = int(wp.floor(g[0]))
        j = int(wp.floor(g[1]))
        k = int(wp.floor(g[2]))
        fx = g[0] - float(i)
        fy = g[1] - float(j)
        fz = g[2] - float(k)
        mass = m[p]
        mom = v[p] * mass
        for di in range(2):
            wx = wp.where(di == 0, 1.0 - fx, fx)
            for dj in range(2):
                wy = wp.where(dj == 0, 1.0 - fy, fy)
                for dk in range(2):
                    w = wx * wy * wp.where(dk == 0, 1.0 - fz, fz)
                    wp.atomic_add(grid_m, i + di, j + dj, k + dk, w * mass)
                    wp.atomic_add(grid_mv, i + di, j + dj, k + dk, w * mom)

    @wp.kernel
    def grid_loss(grid_m: wp.array3d(dtype=float), grid_mv: wp.array3d(dtype=wp.vec3), loss: wp.array(dtype=float)):
        i, j, k = wp.tid()
        c = wp.vec3(float(i), float(j), float(k)) * (1.0 / float(G))
        wp.atomic_add(loss, 0, wp.dot(grid_mv[i, j, k], c) + 0.1 * grid_m[i, j, k] * grid_m[i, j, k])

    @wp.kernel
    def fem_forces(
        x: wp.array(dtype=wp.vec3),
        tets: wp.array2d(dtype=int),
        dm_inv: wp.array(dtype=wp.mat33),
        rest_volume: wp.array(dtype=float),
        mu: float,
        lam: float,
        f: wp.array(dtype=wp.vec3),
    ):
        t = wp.tid()
        i = tets[t, 0]
        j = tets[t, 1]
        k = tets[t, 2]
        l = tets[t, 3]
        x0 = x[i]
        ds = wp.matrix_from_cols(x[j] - x0, x[k] - x0, x[l] - x0)
        F = ds * dm_inv[t]
        J = wp.determinant(F)
        # Neo-Hookean (stable form): P = mu (F - F^-T) + lam log(J) F^-T
        FinvT = wp.transpose(wp.inverse(F))
        P = mu * (F - FinvT) + lam * wp.log(J) * FinvT
        H = -rest_volume[t] * P * wp.transpose(dm_inv[t])
        f1 = wp.vec3(H[0, 0], H[1, 0], H[2, 0])
        f2 = wp.vec3(H[0, 1], H[1, 1], H[2, 1])
        f3 = wp.vec3(H[0, 2], H[1, 2], H[2, 2])
        wp.atomic_add(f, i, -(f1 + f2 + f3))
        wp.atomic_add(f, j, f1)
        wp.atomic_add(f, k, f2)
        wp.atomic_add(f, l, f3)

    @wp.kernel
    def force_loss(f: wp.array(dtype=wp.vec3), w: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        n = wp.tid()
        wp.atomic_add(loss, 0, wp.dot(f[n], w[n]))

    @wp.kernel
    def laplace(a: wp.array3d(dtype=float), b: wp.array3d(dtype=float), k: float):
        i, j, l = wp.tid()
        ni = a.shape[0]
        nj = a.shape[1]
        nl = a.shape[2]
        c = a[i, j, l]
        s = -6.0 * c
        s += a[wp.max(i - 1, 0), j, l] + a[wp.min(i + 1, ni - 1), j, l]
        s += a[i, wp.max(j - 1, 0), l] + a[i, wp.min(j + 1, nj - 1), l]
        s += a[i, j, wp.max(l - 1, 0)] + a[i, j, wp.min(l + 1, nl - 1)]
        b[i, j, l] = c + k * s

    @wp.kernel
    def field_loss(a: wp.array3d(dtype=float), loss: wp.array(dtype=float)):
        i, j, l = wp.tid()
        x = a[i, j, l]
        wp.atomic_add(loss, 0, x * x)

    return {
        "p2g": p2g,
        "grid_loss": grid_loss,
        "fem_forces": fem_forces,
        "force_loss": force_loss,
        "laplace": laplace,
        "field_loss": field_loss,
    }


def tet_block(n: int):
    """Nodes and tetrahedra of an n^3-cell unit block, 6 tets per cell (Kuhn split)."""
    g = np.stack(np.meshgrid(*[np.arange(n + 1)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pts = g.astype(np.float32) / n

    def node(i, j, k):
        return (i * (n + 1) + j) * (n + 1) + k

    i, j, k = (a.reshape(-1) for a in np.meshgrid(*[np.arange(n)] * 3, indexing="ij"))
    corners = [node(i + (c >> 2 & 1), j + (c >> 1 & 1), k + (c & 1)) for c in range(8)]
    paths = ((1, 3), (1, 5), (2, 3), (2, 6), (4, 5), (4, 6))  # 0 -> a -> b -> 7 along the cube's edges
    tets = np.concatenate([np.stack([corners[0], corners[a], corners[b], corners[7]], -1) for a, b in paths])
    return pts, tets.astype(np.int32)


def _taped(wp, sync, forward, loss):
    state = {"tape": None}

    def run_forward():
        loss.zero_()
        tape = wp.Tape()
        with tape:
            forward()
        sync()
        state["tape"] = tape

    def prepare_backward():
        if state["tape"] is None:
            run_forward()
        state["tape"].zero()

    def run_backward():
        state["tape"].backward(loss)
        sync()

    return run_forward, prepare_backward, run_backward


def scatter_section(wp, device, sync, Workload, kernels):
    """The p2g, FEM and stencil rows, forward on a tape and backward."""
    K = kernels(wp, _scatter_kernels)
    rng = np.random.default_rng(11)
    rows = []

    # particle to grid
    n, g = P2G_PARTICLES, P2G_GRID
    px = wp.array(rng.uniform(0.05, 0.95, (n, 3)).astype(np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    pv = wp.array(rng.standard_normal((n, 3)).astype(np.float32), dtype=wp.vec3, device=device, requires_grad=True)
    pm = wp.array(rng.uniform(0.5, 1.5, n).astype(np.float32), dtype=float, device=device, requires_grad=True)
    gm = wp.zeros((g, g, g), dtype=float, device=device, requires_grad=True)
    gmv = wp.zeros((g, g, g), dtype=wp.vec3, device=device, requires_grad=True)
    p2g_loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    def p2g_forward():
        gm.zero_()
        gmv.zero_()
        wp.launch(K.p2g, dim=n, inputs=[px, pv, pm, gm, gmv], device=device)
        wp.launch(K.grid_loss, dim=(g, g, g), inputs=[gm, gmv, p2g_loss], device=device)

    fwd, prep, bwd = _taped(wp, sync, p2g_forward, p2g_loss)
    rows += [
        Workload(ROWS[0], f"{n} particles scatter mass and momentum to 8 nodes of a {g}^3 grid + loss, taped", fwd,
                 check=lambda: float(p2g_loss.numpy()[0])),
        Workload(ROWS[1], "tape.backward of that transfer (gradients of positions, velocities, masses)", bwd, prepare=prep,
                 check=lambda: float(np.abs(px.grad.numpy()).astype(np.float64).sum())),
    ]

    # FEM force assembly
    pts, tets = tet_block(FEM_CELLS)
    rest = pts[tets]  # (T, 4, 3)
    dm = np.stack([rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0], rest[:, 3] - rest[:, 0]], -1)  # columns
    deformed = pts * np.array([1.1, 0.95, 1.02], np.float32) + 0.001 * rng.standard_normal(pts.shape).astype(np.float32)
    fx = wp.array(deformed, dtype=wp.vec3, device=device, requires_grad=True)
    ftets = wp.array(tets, dtype=int, device=device)
    fdm = wp.array(np.linalg.inv(dm).astype(np.float32), dtype=wp.mat33, device=device)
    fvol = wp.array((np.abs(np.linalg.det(dm)) / 6.0).astype(np.float32), dtype=float, device=device)
    forces = wp.zeros(len(pts), dtype=wp.vec3, device=device, requires_grad=True)
    fw = wp.array(rng.standard_normal(pts.shape).astype(np.float32), dtype=wp.vec3, device=device)
    fem_loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    def fem_forward():
        forces.zero_()
        wp.launch(K.fem_forces, dim=len(tets), inputs=[fx, ftets, fdm, fvol, 1.0, 4.0, forces], device=device)
        wp.launch(K.force_loss, dim=len(pts), inputs=[forces, fw, fem_loss], device=device)

    fwd, prep, bwd = _taped(wp, sync, fem_forward, fem_loss)
    rows += [
        Workload(ROWS[2], f"{len(tets)} Neo-Hookean tets add 4 nodal forces each ({len(pts)} nodes) + loss, taped", fwd,
                 check=lambda: float(fem_loss.numpy()[0])),
        Workload(ROWS[3], "tape.backward of that assembly (gradient of the node positions)", bwd, prepare=prep,
                 check=lambda: float(np.abs(fx.grad.numpy()).astype(np.float64).sum())),
    ]

    # 3-D stencil
    s = STENCIL
    fields = [wp.zeros((s, s, s), dtype=float, device=device, requires_grad=True) for _ in range(STENCIL_STEPS + 1)]
    fields[0].assign(rng.random((s, s, s), dtype=np.float32))
    st_loss = wp.zeros(1, dtype=float, device=device, requires_grad=True)

    def stencil_forward():
        for step in range(STENCIL_STEPS):
            wp.launch(K.laplace, dim=(s, s, s), inputs=[fields[step], fields[step + 1], 0.1], device=device)
        wp.launch(K.field_loss, dim=(s, s, s), inputs=[fields[-1], st_loss], device=device)

    fwd, prep, bwd = _taped(wp, sync, stencil_forward, st_loss)
    rows += [
        Workload(ROWS[4], f"{STENCIL_STEPS} steps of 7-point Laplacian smoothing of a {s}^3 float32 field + loss, taped",
                 fwd, check=lambda: float(st_loss.numpy()[0])),
        Workload(ROWS[5], "tape.backward of those steps (gradient of the initial field)", bwd, prepare=prep,
                 check=lambda: float(np.abs(fields[0].grad.numpy()).astype(np.float64).sum())),
    ]
    return rows
