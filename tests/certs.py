"""Throwaway TLS certificates for tests, made with openssl: self-signed EC P-256, PEM, the key PKCS#8."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def self_signed(directory: Path, san: str = "IP:127.0.0.1,DNS:localhost") -> tuple[str, str]:
    """A certificate for CN=localhost listing ``san``, valid 2 days, in ``directory``: (cert, key)
    paths. Skips the test when openssl is not on PATH."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not on PATH; the TLS tests need it to make a throwaway certificate")
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
