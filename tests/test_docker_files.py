"""docker/ cannot be run here (no Docker engine), so check it by construction: what the image
copies exists, paths inside the image match its Python, and the job container runs the
spark-submit example with arguments the example accepts (the same job runs on a local
standalone cluster in tests/cluster)."""

from __future__ import annotations

import os
import re
import shlex

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = open(os.path.join(ROOT, "docker", "Dockerfile")).read()
COMPOSE = yaml.safe_load(open(os.path.join(ROOT, "docker", "compose.yaml")))


def test_everything_the_image_copies_from_the_repository_exists():
    for line in DOCKERFILE.splitlines():
        if line.startswith("COPY ") and "--from=" not in line:
            for src in shlex.split(line)[1:-1]:
                assert os.path.exists(os.path.join(ROOT, src)), f"Dockerfile copies {src}, which does not exist"


def test_image_paths_match_its_python_version():
    pythons = set(re.findall(r"FROM python:(\d+\.\d+)", DOCKERFILE))
    assert len(pythons) == 1, pythons
    (py,) = pythons
    assert f"/usr/local/lib/python{py}/site-packages/pyspark" in DOCKERFILE
    job = COMPOSE["services"]["job"]["command"]
    assert f"/usr/local/lib/python{py}/site-packages/rs_spark/examples/pipeline.py" in job


def test_the_image_builds_the_jvm_shim_jar_it_ships():
    assert "bash jvm-shim/build" in DOCKERFILE
    assert "COPY --from=shim /src/rs_spark/jvm/jars/ ./rs_spark/jvm/jars/" in DOCKERFILE


def test_compose_has_a_master_two_workers_and_a_job_with_valid_arguments():
    from rs_spark.examples.pipeline import parser

    services = COMPOSE["services"]
    assert {"master", "worker1", "worker2", "job"} <= set(services)
    for w in ("worker1", "worker2"):
        assert "spark://master:7077" in services[w]["command"]
    job = services["job"]["command"]
    assert "spark-submit --master spark://master:7077" in job
    argv = shlex.split(job.split("pipeline.py", 1)[1].strip().rstrip('"'))
    args = parser().parse_args(argv)  # SystemExit on an unknown or malformed argument
    # the replay log and outputs live on the shared volume, which every container mounts
    assert args.log_path.startswith("/data/") and args.output.startswith("/data/")
    assert all("data:/data" in svc.get("volumes", []) for svc in services.values())
