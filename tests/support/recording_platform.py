"""A platform adapter that records the DGDs it is asked to apply (deploy-step tests without a cluster)."""

from __future__ import annotations


class RecordingPlatform:
    def __init__(self, frontend_url: str = "http://frontend:8000"):
        self.applied: list[dict] = []
        self.frontend_url = frontend_url

    def list_dgds(self, namespace, api_version, label_selector):
        return []

    def apply_dgd(self, dgd, namespace, owner, *, patch_own=True):
        self.applied.append(dgd)
        return self.frontend_url
