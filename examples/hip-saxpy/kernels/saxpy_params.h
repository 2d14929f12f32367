// Launch parameters of the saxpy kernel (an edit here must rebuild saxpy.hip).
#pragma once
#define SAXPY_BLOCK 256
