// ppbench test fixture. Not vLLM code.
#include "../../../attention/attention_dtypes.h"
