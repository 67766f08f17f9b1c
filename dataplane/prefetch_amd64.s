#include "textflag.h"

// func prefetch2(p unsafe.Pointer)
TEXT ·prefetch2(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	PREFETCHT0	64(AX)
	RET
