"""PyTorch's own data-parallel stacks (DDP, ZeroRedundancyOptimizer, FSDP2, each under
torch.compile) as peers of gptbench's model/train_step_dp: `torchrun -m peers.dp`
(peers/dp/cli.py, docs/multigpu.md)."""
