"""Ray casting a triangle mesh with ``wp.Mesh``: one camera ray per pixel finds its closest hit
with ``wp.mesh_query_ray``, a shadow ray toward the light asks ``wp.mesh_query_ray_anyhit``
whether anything is in the way, and the pixel is shaded by the face normal (Lambert) and a
little ambient light.

The mesh is generated (a bumpy sphere resting on a ground quad, ``--side`` vertices around, about
``2 * side**2`` triangles) or read from a Wavefront ``.obj`` file (``--obj PATH``: vertices and
triangular or polygonal faces, fanned into triangles; it is scaled to fit the view).

Run::

    python -m weft.examples.raycast [--obj PATH] [--side N] [--res N] [--out DIR] [--device cpu|cuda:0]

It prints the device, the mesh size, the BVH build time and the render time, and writes
``raycast.png`` (``--res`` x ``--res`` pixels, default 512) into DIR (default
``./examples_output/raycast/``). The PNG is written with the standard library (zlib), so the
example needs no plotting package.
"""

import argparse
import os
import struct
import sys
import time
import zlib

import numpy as np

import weft as wp


@wp.kernel
def render(
    mesh: wp.uint64,
    res: int,
    eye: wp.vec3,
    light_dir: wp.vec3,
    image: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    px = float(tid % res) + 0.5
    py = float(tid // res) + 0.5
    # a pinhole camera at `eye` looking at the origin, y up, 40 degree field of view
    forward = wp.normalize(-eye)
    right = wp.normalize(wp.cross(forward, wp.vec3(0.0, 1.0, 0.0)))
    up = wp.cross(right, forward)
    scale = 0.364  # tan(20 degrees)
    x = (2.0 * px / float(res) - 1.0) * scale
    y = (1.0 - 2.0 * py / float(res)) * scale
    d = wp.normalize(forward + x * right + y * up)
    sky = wp.vec3(0.62, 0.72, 0.85) * (0.75 + 0.25 * y / scale)
    color = sky
    hit = wp.mesh_query_ray(mesh, eye, d, 1.0e6)
    if hit.result:
        p = eye + hit.t * d
        n = hit.normal
        if wp.dot(n, d) > 0.0:  # seen from behind: shade the side facing the camera
            n = -n
        lit = wp.max(wp.dot(n, light_dir), 0.0)
        if lit > 0.0 and wp.mesh_query_ray_anyhit(mesh, p + 1.0e-3 * n, light_dir, 1.0e6):
            lit = 0.0
        albedo = wp.vec3(0.8, 0.55, 0.35)
        if p[1] < -0.999:  # the ground quad
            albedo = wp.vec3(0.7, 0.7, 0.7)
        color = albedo * (0.15 + 0.85 * lit)
    image[tid] = color


def bumpy_sphere_on_ground(side: int):
    """Vertices and triangle indices of a bumpy unit sphere resting on a ground quad."""
    th, ph = np.meshgrid(np.linspace(0.0, np.pi, side), np.linspace(0.0, 2.0 * np.pi, side, endpoint=False), indexing="ij")
    r = 1.0 + 0.06 * np.sin(6.0 * th) * np.cos(7.0 * ph)
    pts = np.stack([r * np.sin(th) * np.cos(ph), r * np.cos(th), r * np.sin(th) * np.sin(ph)], axis=-1).reshape(-1, 3)
    pts[:, 1] += 0.06  # rests on y = -1
    i, j = np.meshgrid(np.arange(side - 1), np.arange(side), indexing="ij")
    a, b = i * side + j, i * side + (j + 1) % side
    c, d = a + side, b + side
    tris = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([b, d, c], -1).reshape(-1, 3)])
    g = 4.0
    ground = np.array([[-g, -1.0, -g], [g, -1.0, -g], [g, -1.0, g], [-g, -1.0, g]])
    base = len(pts)
    tris = np.concatenate([tris, base + np.array([[0, 2, 1], [0, 3, 2]])])
    return np.concatenate([pts, ground]).astype(np.float32), tris.astype(np.int32)


def read_obj(path: str):
    """Vertices and triangles of a Wavefront .obj file (polygons fanned), centred and scaled to
    fit in the unit ball."""
    verts, tris = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "v":
                verts.append([float(x) for x in parts[1:4]])
            elif parts[0] == "f":
                ids = [int(p.split("/")[0]) for p in parts[1:]]
                ids = [k - 1 if k > 0 else len(verts) + k for k in ids]
                tris.extend([ids[0], ids[k], ids[k + 1]] for k in range(1, len(ids) - 1))
    pts = np.asarray(verts, dtype=np.float64)
    pts -= 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    pts /= max(np.linalg.norm(pts, axis=1).max(), 1e-12)
    return pts.astype(np.float32), np.asarray(tris, dtype=np.int32)


def write_png(path: str, rgb: np.ndarray):
    """Write an (h, w, 3) float image in [0, 1] as an 8-bit PNG (standard library only)."""
    h, w, _ = rgb.shape
    data = (np.clip(rgb, 0.0, 1.0) ** (1.0 / 2.2) * 255.0 + 0.5).astype(np.uint8)
    raw = b"".join(b"\x00" + data[row].tobytes() for row in range(h))

    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def run(points: np.ndarray, tris: np.ndarray, res: int, device):
    """Build the mesh and render it; returns (image (res, res, 3), build seconds, render seconds)."""
    t0 = time.perf_counter()
    mesh = wp.Mesh(
        points=wp.array(points, dtype=wp.vec3, device=device),
        indices=wp.array(tris.reshape(-1), dtype=wp.int32, device=device),
    )
    wp.synchronize_device(device)
    t_build = time.perf_counter() - t0
    image = wp.zeros(res * res, dtype=wp.vec3, device=device)
    light = np.array([0.5, 0.8, 0.35])
    light /= np.linalg.norm(light)
    args = [mesh.id, res, wp.vec3(2.2, 1.6, 4.4), wp.vec3(*light), image]
    wp.launch(render, dim=res * res, inputs=args, device=device)  # builds the kernel
    wp.synchronize_device(device)
    t0 = time.perf_counter()
    wp.launch(render, dim=res * res, inputs=args, device=device)
    wp.synchronize_device(device)
    t_render = time.perf_counter() - t0
    return image.numpy().reshape(res, res, 3), t_build, t_render


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obj", default=None, help="a Wavefront .obj file to render instead of the generated mesh")
    parser.add_argument("--side", type=int, default=256, help="vertices around the generated sphere")
    parser.add_argument("--res", type=int, default=512, help="image width and height in pixels")
    parser.add_argument("--out", default=os.path.join("examples_output", "raycast"))
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    wp.init()
    device = wp.get_device(args.device)
    points, tris = read_obj(args.obj) if args.obj else bumpy_sphere_on_ground(args.side)
    print(f"device {device}; mesh of {len(points)} vertices, {len(tris)} triangles")
    image, t_build, t_render = run(points, tris, args.res, device)
    print(f"BVH build {t_build * 1e3:.1f} ms; {args.res}x{args.res} camera rays + shadow rays {t_render * 1e3:.1f} ms")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "raycast.png")
    write_png(path, image)
    print(f"wrote {path}")
    return image


if __name__ == "__main__":
    main(sys.argv[1:])
