"""``linalg.eigh`` of 1,024 8x8 matrices (float32), ms per call."""

from _linalg import main

if __name__ == "__main__":
    main("eigh", "batch8")
