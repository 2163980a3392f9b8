"""`tvm.tirx.transform`: TVM's TIR passes. tilelang's passes run inside the compile, in
the order src/transform/pipeline.cpp fixes; a pass cannot be applied by name."""

from .._scope import facade_getattr

# TVM's TIR passes and pass constructors.
_TVM_NAMES = {
    "AnnotateDeviceRegions", "AnnotateEntryFunc", "Apply", "BF16ComputeLegalize",
    "BF16StorageLegalize", "BindTarget", "CombineContextCall", "CommonSubexprElimTIR",
    "CompactBufferAllocation", "ConvertBlocksToOpaque", "ConvertForLoopsToSerial",
    "ConvertSSA", "DecorateDeviceScope", "FP8ComputeLegalize", "FP8StorageLegalize",
    "Filter", "FlattenBuffer", "ForceNarrowIndexToInt32", "HoistExpression",
    "HoistIfThenElse", "InferFragment", "InjectDoubleBuffer", "InjectPTXAsyncCopy",
    "InjectPermutedLayout", "InjectRollingBuffer", "InjectSoftwarePipeline",
    "InjectVirtualThread", "InlinePrivateFunctions", "InstrumentBoundCheckers",
    "LiftThreadBinding", "LoopPartition", "LowerAsyncDMA", "LowerCrossThreadReduction",
    "LowerCustomDatatypes", "LowerDeviceStorageAccessInfo", "LowerInitBlock",
    "LowerIntrin", "LowerMatchBuffer", "LowerOpaqueBlock", "LowerThreadAllreduce",
    "LowerTVMBuiltin", "LowerWarpMemory", "MakePackedAPI", "MakeUnpackedAPI",
    "MergeSharedMemoryAllocations", "NarrowDataType", "PlanAndUpdateBufferAllocationLocation",
    "PrimFuncPass", "RemoveAssume", "RemoveNoOp", "RemoveStoreUndef",
    "RenormalizeSplitPattern", "RewriteUnsafeSelect", "Simplify", "SkipAssert",
    "SplitHostDevice", "StorageRewrite", "ThreadSync", "UnifyThreadBinding", "UnrollLoop",
    "VectorizeLoop", "VerifyMemory", "prim_func_pass",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.tirx.transform", "no passes", _TVM_NAMES,
    "the compile runs its passes itself (tilelang.compile / tilelang.lower); steer them with "
    "pass_configs",
)  # fmt: skip
