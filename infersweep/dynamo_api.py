"""Names the Dynamo operator defines, which both the DGD adapter and readiness need.

Moved here from steps/platform.py (which re-exports them) so that steps/readiness.py no longer imports
steps/platform.py, which imports it back (the import cycle of issue 14).
"""

from __future__ import annotations

# The DynamoGraphDeployment custom resource: group and plural of its CRD
# (deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml in ai-dynamo/dynamo).
DGD_GROUP = "nvidia.com"
DGD_PLURAL = "dynamographdeployments"


def frontend_url(name: str, namespace: str) -> str:
    # The operator exposes the frontend as the Service `<dgd>-frontend` on port 8000.
    return f"http://{name}-frontend.{namespace}.svc.cluster.local:8000"
