#include "vqf_compat.h"
#include <stdio.h>
