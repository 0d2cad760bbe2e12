"""The fixed input rows of the quantizer test vectors (tests/data/quant/input.f32).

16 rows of 256 f32 values, chosen to reach the branches of the reference quantizers: random rows at
small, unit and large scales, all-zero and constant rows, one-sided rows, an outlier, values whose
scales fall into f16's subnormal range, exact small integers and rows whose blocks differ in scale.
The file is little-endian f32, row after row.
"""
import pathlib

import numpy as np

ROWS, COLS = 16, 256


def make_inputs() -> np.ndarray:
    rng = np.random.default_rng(2026)
    x = np.empty((ROWS, COLS), dtype=np.float32)
    x[0] = rng.normal(0, 1, COLS)
    x[1] = rng.normal(0, 1e-3, COLS)
    x[2] = rng.normal(0, 1e3, COLS)
    x[3] = rng.uniform(-1, 1, COLS)
    x[4] = 0.0
    x[5] = 0.5
    x[6] = -2.0
    x[7] = rng.normal(0, 1, COLS)
    x[7, 17] = 50.0
    x[8] = rng.uniform(0, 1, COLS)
    x[9] = rng.uniform(-1, 0, COLS)
    x[10] = rng.normal(0, 1e-6, COLS)
    x[11] = np.where(np.arange(COLS) % 2 == 0, 1.0, -1.0)
    x[12] = (np.arange(COLS) % 16) - 8
    x[13] = rng.normal(0, 1, COLS) * np.repeat(2.0 ** (np.arange(8) - 4), 32)
    x[14, :128] = 0.0
    x[14, 128:] = rng.normal(0, 1, 128)
    x[15] = rng.normal(3, 0.1, COLS)
    return x


def write_inputs(directory: pathlib.Path) -> np.ndarray:
    x = make_inputs()
    directory.mkdir(parents=True, exist_ok=True)
    x.astype("<f4").tofile(directory / "input.f32")
    return x


if __name__ == "__main__":
    write_inputs(pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "quant")
