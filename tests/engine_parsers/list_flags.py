"""The flags each Dynamo worker module accepts, from its own parser (runs inside an engine-parser env).

stdout (last line): JSON {module: [flag, ...]}, sorted. A worker's command line is parsed in two stages that
this builds the same way, without parsing anything:
- dynamo.vllm (ai-dynamo dynamo/vllm/args.py parse_args): an argparse parser with DynamoRuntimeArgGroup and
  DynamoVllmArgGroup, then vLLM's FlexibleArgumentParser with AsyncEngineArgs.add_cli_args for the rest;
- dynamo.sglang (dynamo/sglang/args.py parse_args): DynamoRuntimeArgGroup and DynamoSGLangArgGroup, then
  SGLang's ServerArgs.add_cli_args.
A flag of either stage is a flag of the module. params/engines/releases/<release>.flags.yaml holds this
output for each release (tests/engines/test_engine_parsers.py checks it against the release's parsers).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

logging.disable(logging.CRITICAL)


def _flags(*parsers: argparse.ArgumentParser) -> list[str]:
    return sorted({o for p in parsers for a in p._actions for o in a.option_strings if o.startswith("--")} - {"--help"})


def vllm_flags() -> list[str]:
    import vllm.platforms

    if vllm.platforms.current_platform.device_type == "":  # as parse_workers._cpu_platform
        from vllm.platforms.cpu import CpuPlatform

        vllm.platforms.current_platform = CpuPlatform()
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.vllm.backend_args import DynamoVllmArgGroup
    from vllm.engine.arg_utils import AsyncEngineArgs

    try:
        from vllm.utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    dynamo = argparse.ArgumentParser(allow_abbrev=False)
    DynamoRuntimeArgGroup().add_arguments(dynamo)
    DynamoVllmArgGroup().add_arguments(dynamo)
    engine = FlexibleArgumentParser(add_help=False)
    AsyncEngineArgs.add_cli_args(engine, async_args_only=False)
    return _flags(dynamo, engine)


def sglang_flags() -> list[str]:
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.sglang.backend_args import DynamoSGLangArgGroup
    from sglang.srt.server_args import ServerArgs

    dynamo = argparse.ArgumentParser(allow_abbrev=False)
    DynamoRuntimeArgGroup().add_arguments(dynamo)
    DynamoSGLangArgGroup().add_arguments(dynamo)
    engine = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(engine)
    return _flags(dynamo, engine)


if __name__ == "__main__":
    sys.stdout.write("\n" + json.dumps({"dynamo.vllm": vllm_flags(), "dynamo.sglang": sglang_flags()}) + "\n")
