"""Where a DGD is realised: the DGD adapters and what the DGD steps do through them.

"Platform" here means the DGD adapter only (the cluster's settings, params/cluster.yaml, are another
thing). Local mode's adapter lives in infersweep/local/dynamo/adapter.py and is named in the steps'
environment, never imported from here.

  protocol.py    the Platform protocol (what a DGD adapter does) and its one family of errors
  select.py      which DGD adapter a step uses
  dgd.py         a run's DGD: the names the Dynamo operator defines, how a run names and labels it
  kube.py        the DGD adapter for a cluster: the Kubernetes API
  kubeconfig.py  where the Kubernetes client finds its cluster (the adapter and the reaper alike)
  readiness.py   readiness of a DGD in a cluster, failing fast and saying why
  dgd_policy.py  what a DGD may ask of the cluster: checked before deploy applies one
  dgd_update.py  the DGD a retried deploy (or a later treatment) sends over its run's existing one
  keda.py        KEDA ScaledObjects for a DGD's autoscaled roles, built at deploy from the DGD
  operations.py  what the deploy, wait-ready, teardown and ensure-pvc steps do
  reaper.py      the reaper CronWorkflow's work: delete every infersweep DGD whose run is over
"""
