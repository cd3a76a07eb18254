// ppbench test fixture: an include reached from csrc/ (the build's include path). Not vLLM code.
#include "torch_utils.h"
#include <torch/all.h>
