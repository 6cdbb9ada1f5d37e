"""Stand-ins (Kubernetes API, Argo retry rules) and helpers the tests share; tests.support.golden writes tests/golden/."""
