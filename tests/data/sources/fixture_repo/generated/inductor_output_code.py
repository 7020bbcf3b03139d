# Shape of a torch.compile (Inductor) output file (fixture).
from torch._inductor.async_compile import AsyncCompile

async_compile = AsyncCompile()

triton_poi_fused_add_mul_1 = async_compile.triton('triton_poi_fused_add_mul_1', '''
import triton
import triton.language as tl

@triton_heuristics.pointwise(size_hints=[1024], filename=__file__)
@triton.jit
def triton_poi_fused_add_mul_1(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    pass
''', device_str='cuda')
