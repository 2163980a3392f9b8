import tilelang
import tilelang.language as T


@T.prim_func
def k(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=1):
        for i in T.serial(16):
            B[i] = A[i]


print("traced", flush=True)
kern = tilelang.compile(k, target="cpu")
print("compiled", flush=True)
