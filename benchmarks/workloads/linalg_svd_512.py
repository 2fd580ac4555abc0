"""``linalg.svd`` of 512x512 (float32), ms per call."""

from _linalg import main

if __name__ == "__main__":
    main("svd", "512")
