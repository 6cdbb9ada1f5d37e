"""How a recipe becomes a DynamoGraphDeployment (DGD). No Hera, no Argo: plain dicts in the CRD's shape.

File map:
  deployable.py   `deployable_dgd`: render + scheduling step, the one entry every caller uses
  render.py       the DGD's graph: frontend and worker components, args, env, GPUs, rollout pace
  pod_extras.py   the pod-level parts: fabric, placement, host memory, /dev/shm
  autoscaling.py  the autoscaling annotation a DGD carries (the recipe's roles, bounds and metric); at deploy
                  infersweep/platform/keda.py builds the KEDA ScaledObjects from it
  lanes.py        which GPU-pool lane(s) a run holds (the GPU guard's admission) and its spare GPUs
  scheduling.py   the queue labels / lane labels the configured GPU guard needs on the DGD and its pods
"""

from infersweep.dgd.deployable import deployable_dgd, pool_is_exact

__all__ = ["deployable_dgd", "pool_is_exact"]
