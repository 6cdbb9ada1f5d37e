"""Stand-ins for the cluster services a run talks to, as real programs on this machine.

- s3server.py   `LocalS3`: moto's S3-compatible server, the artifact repository and results bucket.
- prometheus.py `LocalPrometheus`: the Debian package's real Prometheus, scraping file_sd targets.

The DGD itself is stood in for by the local DGD adapter (infersweep/local/dynamo/adapter.py, dynamo.py)."""
