"""Throwaway TLS certificates for tests and benchmarks, made with openssl: self-signed EC P-256, PEM, the key
PKCS#8. Importable without pytest (benchmarks/latency.py uses :func:`make_self_signed`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

NO_OPENSSL = "openssl is not on PATH; it is needed to make a throwaway certificate"


def self_signed(directory: Path, san: str = "IP:127.0.0.1,DNS:localhost") -> tuple[str, str]:
    """A certificate for CN=localhost listing ``san``, valid 2 days, in ``directory``: (cert, key)
    paths. Skips the test when openssl is not on PATH."""
    if shutil.which("openssl") is None:
        import pytest  # only here: benchmarks import this module without pytest

        pytest.skip(NO_OPENSSL)
    return make_self_signed(directory, san)


def make_self_signed(directory: Path, san: str = "IP:127.0.0.1,DNS:localhost") -> tuple[str, str]:
    """As :func:`self_signed`, raising RuntimeError when openssl is not on PATH."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError(NO_OPENSSL)
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            f"subjectAltName={san}",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return str(cert), str(key)
