"""One module per family; each has register_cases(options), registering through peers.case."""
from peers.families import attention, layernorm, loss, optim, softmax, train_step, train_step_fp8

FAMILIES = (softmax, layernorm, loss, attention, optim, train_step, train_step_fp8)
