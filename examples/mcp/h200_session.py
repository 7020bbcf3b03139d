"""An MCP session on a GPU machine, driven by the official Python MCP SDK:
`magpie mcp` over stdio; hardware_spec, analyze (Magpie-style arguments: a
kernel file, a compile command and a testcase) and compare (a kernel YAML);
each structuredContent validated against the tool's outputSchema.

    python3 examples/mcp/h200_session.py MAGPIE_BIN OUT_DIR

Run from the repository root (docs/GPU_VALIDATION.md records a run)."""
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import jsonschema
from mcp import Client, StdioServerParameters

ROOT = Path.cwd()


async def main(magpie: str, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results"
    params = StdioServerParameters(command=magpie, args=["mcp"], env=dict(os.environ))
    failures = 0
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        print(f"tools: {len(tools)}: {', '.join(sorted(tools))}")

        async def call(name, arguments):
            nonlocal failures
            seen = []

            async def progress(done, total, message):
                seen.append((done, total, message))
                print(f"  progress {done}/{total}: {message}", flush=True)

            t0 = time.time()
            r = await client.call_tool(name, arguments, progress_callback=progress)
            text = "\n".join(c.text for c in r.content if c.type == "text")
            print(f"\n=== {name} ({time.time() - t0:.1f} s, isError={r.is_error}, "
                  f"{len(seen)} progress notifications)\n{text[:4000]}")
            if r.is_error:
                failures += 1
                return None
            jsonschema.validate(r.structured_content, tools[name].output_schema)
            print(f"  structuredContent valid against {name}'s outputSchema")
            (out / f"{name}.json").write_text(json.dumps(r.structured_content, indent=2))
            return r.structured_content

        await call("hardware_spec", {"device_id": 0, "include_all": False})
        va = ROOT / "examples/kernels/vector_add"
        await call("analyze", {
            "kernel_path": str(va / "vector_add.cu"),
            "kernel_type": "cuda",
            "compile_command": "nvcc -O3 -arch=${MAGPIE_CUDA_ARCH} -lineinfo -o ${MAGPIE_KERNEL_DIR}/vector_add vector_add.cu",
            "testcase_command": "${MAGPIE_KERNEL_DIR}/vector_add 50",
            "output_dir": str(results)})
        await call("compare", {
            "kernel_config": str(ROOT / "examples/kernels/matmul/compare.yaml"),
            "output_dir": str(results)})
        await call("list_benchmark_results", {"output_dir": str(results), "limit": 10})
    print(f"\n{failures} tool call(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], Path(sys.argv[2]))))
