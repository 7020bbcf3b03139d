#!/usr/bin/env python3
"""A stand-in engine with real GPU work, for examples/gpu/validate_system_profiler.sh.

Called as an engine is (`vllm serve MODEL --port N ...`; every argument but
--port is ignored), it serves the timed stub's OpenAI-compatible API
(tests/e2e/timed_stream_server.py: /health, /v1/models, streamed
/v1/completions) and, before streaming each answer, runs a few bf16 matrix
multiplies on the GPU with PyTorch, so a profiler wrapped around it sees CUDA
kernels (a GEMM and an elementwise ReLU) in a known proportion to the load."""
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
import timed_stream_server as stub  # noqa: E402
import torch  # noqa: E402


class TorchMatmulServer(stub.TimedStreamServer):
    def __init__(self):
        super().__init__(ttft_s=0.01, itl_s=0.005, model="torch-matmul", words_are_tokens=True, log_path=None)
        self.a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)

    async def stream_completion(self, writer, body, arrival):
        c = self.a
        for _ in range(8):
            c = torch.relu(c @ self.a) * 1e-3
        torch.cuda.synchronize()
        await super().stream_completion(writer, body, arrival)


async def main(argv):
    port = int(argv[argv.index("--port") + 1]) if "--port" in argv else 8000
    server = TorchMatmulServer()
    listener = await asyncio.start_server(server.serve_connection, "127.0.0.1", port, backlog=256)
    print(f"torch-matmul engine on port {port}, GPU {torch.cuda.get_device_name()}", flush=True)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
