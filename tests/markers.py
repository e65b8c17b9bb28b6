"""Source locations of marked test lines, for checking that error messages point at them."""


def location_of(path: str, marker: str) -> str:
    """``path:line`` of the line in ``path`` that ends with the comment ``# marker``."""
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return f"{path}:{n}"
    raise AssertionError(f"marker {marker} not found in {path}")
