"""The Argo Server stand-in's `argo` fixture for this folder's tests (a conftest, so no test module imports a name
that its test functions then shadow as a parameter)."""

from tests.support.argo_server_standin import argo  # noqa: F401 (the fixture)
