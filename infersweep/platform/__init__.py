"""Where a DGD is realised: the DGD adapters and what the DGD steps do through them.

"Platform" here means the DGD adapter only (the cluster's settings, params/cluster.yaml, are another
thing). protocol: the Platform protocol and its one error family; dgd: a run's DGD names and labels;
kube + readiness: the Kubernetes adapter; select: which adapter a step uses (local mode's lives in
infersweep/local/dynamo/adapter.py and is named in the steps' environment, never imported from here);
operations: the deploy, wait-ready, teardown and ensure-pvc steps' work; reaper: the reaper CronWorkflow's.
"""
