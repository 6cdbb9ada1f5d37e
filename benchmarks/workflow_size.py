"""Workflow size vs Argo's object limits, for every recipe of the catalog (the nightly suite is one
CronWorkflow per recipe, workflows/cron.py, so its biggest Workflow is the biggest per-recipe one).

For each recipe: the submitted Workflow and its CronWorkflow (bytes of JSON, as etcd stores them), and
the Workflow as it stands when finished: the controller copies the pipeline WorkflowTemplate's spec into
status.storedWorkflowTemplateSpec and every referenced step template into status.storedTemplates, and
keeps one node status per node (inputs and outputs parameters included). Bounds: the controller refuses
a Workflow over 1 MiB (it compresses, then offloads status.nodes, only if persistence is configured);
etcd refuses objects over 1.5 MiB. Also the node count (pods and DAG nodes) and the largest parameter
value: large data belongs in artifacts, never in parameters (we keep each value under 64 KiB).

    .venv/bin/python benchmarks/workflow_size.py
"""

from __future__ import annotations

import json

from _common import Figure, report, table

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import all_recipe_paths, load_recipe
from workflows.render import render_recipe

# Measured on Argo v3.x node statuses: id, name, displayName, type, templateName/Ref, phase, boundaryID,
# startedAt, finishedAt, progress, resourcesDuration, children, hostNodeName, outputs.exitCode...
NODE_STATUS_BYTES = 700


def _size(doc) -> int:
    return len(json.dumps(doc, separators=(",", ":")).encode())


def node_plan(bundle) -> tuple[list[dict], int]:
    """The nodes a finished run of this Workflow has: (nodes with their parameter bytes, pods)."""
    pipeline = next(
        t for t in bundle.templates if (t["metadata"].get("labels") or {}).get("infersweep.io/kind") == "pipeline"
    )
    spec = pipeline["spec"]
    local = {t["name"]: t for t in spec["templates"]}
    refs = {t["metadata"]["name"]: t for t in bundle.templates}
    args = {p["name"]: str(p.get("value", "")) for p in spec.get("arguments", {}).get("parameters", [])}
    args |= {
        p["name"]: str(p.get("value", "")) for p in bundle.workflow["spec"].get("arguments", {}).get("parameters", [])
    }

    def param_bytes(task: dict, item: dict | None) -> int:
        total = 0
        for p in task.get("arguments", {}).get("parameters", []):
            v = str(p.get("value", ""))
            for name, val in args.items():
                v = v.replace("{{workflow.parameters.%s}}" % name, val)
            if item:
                v = v.replace("{{item}}", json.dumps(item))
                for k, val in item.items():
                    v = v.replace("{{item.%s}}" % k, str(val))
            total += len(v.encode())
        return total

    nodes: list[dict] = []

    def walk(template_name: str, inputs: dict[str, str], label: str) -> None:
        tmpl = local[template_name]
        nodes.append({"name": label, "kind": "dag", "param_bytes": sum(len(v.encode()) for v in inputs.values())})
        for task in tmpl["dag"]["tasks"]:
            if "templateRef" in task:
                target = refs[task["templateRef"]["name"]]
                kind = "pod" if any("container" in t for t in target["spec"]["templates"]) else "dag"
            else:
                kind = "dag"
            if "withParam" in task:
                raw = task["withParam"]
                items = (
                    json.loads(inputs.get(raw.strip("{} ").split(".")[-1], "[]")) if "inputs.parameters" in raw else []
                )
                nodes.append({"name": f"{label}.{task['name']}", "kind": "group", "param_bytes": 0})
                for i, item in enumerate(items):
                    nodes.append(
                        {"name": f"{label}.{task['name']}({i})", "kind": kind, "param_bytes": param_bytes(task, item)}
                    )
            elif kind == "dag" and "template" in task:
                sub_inputs = {}
                for p in task.get("arguments", {}).get("parameters", []):
                    v = str(p.get("value", ""))
                    for name, val in args.items():
                        v = v.replace("{{workflow.parameters.%s}}" % name, val)
                    sub_inputs[p["name"]] = v
                walk(task["template"], sub_inputs, f"{label}.{task['name']}")
            else:
                nodes.append({"name": f"{label}.{task['name']}", "kind": kind, "param_bytes": param_bytes(task, None)})

    walk(spec["entrypoint"], {}, "root")
    if spec.get("onExit"):
        walk(spec["onExit"], {}, "onExit")
    return nodes, sum(n["kind"] == "pod" for n in nodes)


def measure_recipe(r, settings) -> dict:
    bundle = render_recipe(r, settings)
    wf = bundle.workflow
    pipeline = next(
        t for t in bundle.templates if (t["metadata"].get("labels") or {}).get("infersweep.io/kind") == "pipeline"
    )
    steps = [t for t in bundle.templates if t is not pipeline]
    nodes, pods = node_plan(bundle)
    status_nodes = sum(NODE_STATUS_BYTES + n["param_bytes"] for n in nodes)
    finished = _size(wf) + _size(pipeline["spec"]) + sum(_size(t["spec"]["templates"][0]) for t in steps) + status_nodes
    params = [(p["name"], len(str(p.get("value", "")).encode())) for p in wf["spec"]["arguments"]["parameters"]]
    biggest = max(params, key=lambda p: p[1])
    cron = None
    if settings.nightly:
        try:
            from workflows.cron import nightly_cron

            cron = _size(nightly_cron(r, settings))
        except Exception as exc:  # the cron module is another engineer's work in progress
            cron = f"n/a ({type(exc).__name__})"
    return {
        "recipe": r.name,
        "workflow": _size(wf),
        "cron": cron,
        "pipeline": _size(pipeline),
        "finished": finished,
        "nodes": len(nodes),
        "pods": pods,
        "biggest_param": biggest,
    }


def main(argv: list[str] | None = None) -> list[Figure]:
    settings = load_cluster_settings()
    rows = [measure_recipe(load_recipe(p), settings) for p in all_recipe_paths()]
    print(
        table(
            [
                [
                    x["recipe"],
                    f"{x['workflow']:,}",
                    str(x["cron"]),
                    f"{x['pipeline']:,}",
                    f"{x['finished']:,}",
                    str(x["nodes"]),
                    str(x["pods"]),
                    f"{x['biggest_param'][0]} {x['biggest_param'][1]:,}",
                ]
                for x in rows
            ],
            [
                "recipe",
                "workflow B",
                "cron B",
                "pipeline tmpl B",
                "finished wf B (est.)",
                "nodes",
                "pods",
                "largest parameter B",
            ],
        )
    )
    big = max(rows, key=lambda x: x["finished"])
    figs = [
        Figure(
            "workflow_size",
            f"biggest submitted Workflow ({max(rows, key=lambda x: x['workflow'])['recipe']})",
            max(x["workflow"] for x in rows) / 1024,
            "KiB",
            "< 1024",
            "JSON bytes; controller limit 1 MiB",
        ),
        Figure(
            "workflow_size",
            f"biggest finished Workflow incl. stored templates + node status ({big['recipe']})",
            big["finished"] / 1024,
            "KiB",
            "< 1024",
            f"{big['nodes']} nodes, {big['pods']} pods; etcd limit 1.5 MiB, Argo compresses/offloads above 1 MiB",
        ),
        Figure(
            "workflow_size",
            "most nodes of one Workflow",
            max(x["nodes"] for x in rows),
            "nodes",
            note=f"most pods {max(x['pods'] for x in rows)}",
        ),
        Figure(
            "workflow_size",
            "largest parameter value",
            max(x["biggest_param"][1] for x in rows) / 1024,
            "KiB",
            "< 64",
            f"'{max(rows, key=lambda x: x['biggest_param'][1])['biggest_param'][0]}'; results travel as files/artifacts",
        ),
        Figure(
            "workflow_size",
            f"sum over the catalog ({len(rows)} Workflows; one CronWorkflow each, not one object)",
            sum(x["finished"] for x in rows) / 1024,
            "KiB",
            note="what a single suite Workflow inlining every recipe would weigh",
        ),
    ]
    return report("workflow_size", figs, {"recipes": rows})


if __name__ == "__main__":
    main()
