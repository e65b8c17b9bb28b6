"""Spatial structures: meshes, BVHs, hash grids, volumes, marching cubes."""
