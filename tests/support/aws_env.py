"""A shell with no AWS credentials and no store configured, as a new user's: nothing from this machine's
environment or ~/.aws reaches boto3, and it never asks the EC2 metadata endpoint."""

from __future__ import annotations

from pathlib import Path

AWS_VARIABLES = (
    "INFERSWEEP_STORE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
)


def forget_aws(monkeypatch, folder: Path) -> None:
    for var in AWS_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(folder / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(folder / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
