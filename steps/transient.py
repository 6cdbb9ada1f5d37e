"""Exit code 75 (EX_TEMPFAIL) for failures that a rerun can fix, so Argo retries exactly those (the runner,
steps/runner.py, maps every step's errors to exit codes with this classification).

The step templates retry with `retryPolicy: Always` and `expression: lastRetry.status == "Error" ||
asInt(lastRetry.exitCode) == 75` (workflows/steps_library.py). Argo v4.1.2 workflow/controller/operator.go
processNodeRetries: `OnError` never retries a node that Failed (a non-zero exit), `Always` retries both
Failed and Error, and a non-empty `expression` is evaluated over `lastRetry.*` (buildRetryStrategyLocalScope)
and stops retrying when false. So a bad flag or a refused DGD (exit 1/2) fails at once, while an API server
hiccup, a throttled S3 or a dropped connection (exit 75) is retried with backoff.
"""

from __future__ import annotations

TRANSIENT_EXIT = 75
# HTTP statuses a rerun can outlive: throttling, server errors, gateway errors; 0 = no response at all.
TRANSIENT_STATUS = {0, 408, 429, 500, 502, 503, 504}
_TRANSIENT_NAMES = {
    "MaxRetryError",
    "ProtocolError",
    "NewConnectionError",
    "ReadTimeoutError",
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeout",
    "ConnectTimeout",
    "ConnectionClosedError",
    "ChunkedEncodingError",
}
_TRANSIENT_S3_CODES = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
}


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    status = getattr(exc, "status", None)  # kubernetes.client.exceptions.ApiException
    if isinstance(status, int) and type(exc).__name__ == "ApiException":
        return status in TRANSIENT_STATUS
    response = getattr(exc, "response", None)  # botocore ClientError
    if isinstance(response, dict):
        err = response.get("Error", {})
        code = str(err.get("Code", ""))
        http = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return code in _TRANSIENT_S3_CODES or http in TRANSIENT_STATUS
    if any(c.__name__ in _TRANSIENT_NAMES for c in type(exc).__mro__):
        return True
    cause = exc.__cause__ or exc.__context__
    return cause is not None and cause is not exc and is_transient(cause)
