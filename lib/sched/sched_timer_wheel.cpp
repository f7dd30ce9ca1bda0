#include "sched_timer_wheel.h"
