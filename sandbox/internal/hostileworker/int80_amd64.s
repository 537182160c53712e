#include "textflag.h"

// func int80Getpid() int64: getpid (20) through int 0x80, the 32-bit
// system call ABI.
TEXT ·int80Getpid(SB),NOSPLIT,$0-8
	MOVQ $20, AX
	INT $0x80
	MOVQ AX, ret+0(FP)
	RET
