//go:build amd64 && !purego

#include "textflag.h"

// decodeFast(s *fastState) int: fastGeneric's loop (fast_generic.go),
// decision for decision, with the registers the Go compiler could not
// spare: no value of the loop lives on the stack.
//
//	AX  bits       the bit buffer
//	BX  nb         bits valid in it (at most 63)
//	CX  shift counts; the destination of a match copy
//	DX  e          a table entry
//	SI  in         the input's first byte
//	DI  out        the output buffer's first byte
//	R8  ip         input bytes read into the bit buffer
//	R9  op         output bytes written
//	R10 tables     the block's tables: lit, then dist at DIST
//	R11 inLimit    the loop runs while R8 <= R11 ...
//	R12 outLimit   ... and R9 <= R12
//	R13 the bits before a code was consumed; the source of a match copy
//	R14 a literal; a match's length, then its end
//	R15 a match's distance; a word copied
//
// Every memory access stays within what fastGeneric's bounds checks
// allow: the loop's limits leave room for two refills of eight bytes and
// for a literal, a match and the eight bytes a copy may write past it;
// a subtable index is checked against the table's size, and a distance
// against the output written.

#define LIT_SIZE 2342
#define DIST_SIZE 402
#define DIST 9368 // LIT_SIZE * 4: where the distance table starts

// REFILL reads eight bytes at ip into the bit buffer above its nb bits,
// moves ip past the whole bytes now in it and leaves nb at 56 or more.
#define REFILL \
	MOVQ (SI)(R8*1), R13 \
	MOVQ BX, CX \
	SHLQ CX, R13 \
	ORQ  R13, AX \
	MOVQ $63, R13 \
	SUBQ BX, R13 \
	SHRQ $3, R13 \
	ADDQ R13, R8 \
	ORQ  $56, BX

// CONSUME drops the bits of entry DX, keeping the bits before in R13.
#define CONSUME \
	MOVQ    AX, R13 \
	MOVBLZX DX, CX \
	SHRQ    CX, AX \
	SUBQ    CX, BX

// LOOKUP_LIT sets DX to the main table's entry for the next bits.
#define LOOKUP_LIT \
	MOVQ AX, DX \
	ANDQ $2047, DX \
	MOVL (R10)(DX*4), DX

// VALUE sets reg to the value an entry DX consumed from the bits R13
// gives: its base plus its extra bits.
#define VALUE(reg) \
	MOVBLZX DX, CX \
	MOVQ    $1, reg \
	SHLQ    CX, reg \
	DECQ    reg \
	ANDQ    R13, reg \
	MOVL    DX, CX \
	SHRL    $8, CX \
	ANDL    $15, CX \
	SHRQ    CX, reg \
	MOVL    DX, CX \
	SHRL    $16, CX \
	ADDQ    CX, reg

// SUBINDEX sets R13 to the subtable index of link DX: its start plus
// the next bits of the subtable's width.
#define SUBINDEX \
	MOVL DX, CX \
	SHRL $8, CX \
	ANDL $15, CX \
	MOVQ $1, R13 \
	SHLQ CX, R13 \
	DECQ R13 \
	ANDQ AX, R13 \
	MOVL DX, CX \
	SHRL $16, CX \
	ADDQ CX, R13

// LITERAL writes the byte of literal entry DX and looks up the entry of
// the next bits, into DX.
#define LITERAL \
	MOVL DX, R14 \
	LOOKUP_LIT \
	SHRL $16, R14 \
	MOVB R14, (DI)(R9*1) \
	INCQ R9

// MORE consumes entry DX and goes to symbol unless it is a literal.
#define MORE \
	CONSUME \
	BTL  $12, DX \
	JCC  symbol

// func decodeFast(s *fastState) int
TEXT ·decodeFast(SB), NOSPLIT, $0-16
	MOVQ s+0(FP), R15
	MOVQ 0(R15), SI
	MOVQ 8(R15), R11
	MOVQ 16(R15), DI
	MOVQ 24(R15), R12
	MOVQ 32(R15), R10
	MOVQ 40(R15), AX
	MOVQ 48(R15), BX
	MOVQ 56(R15), R8
	MOVQ 64(R15), R9

	REFILL
	LOOKUP_LIT

loop:
	CMPQ R8, R11
	JGT  limit
	CMPQ R9, R12
	JGT  limit
	REFILL
	MORE

	// Up to two more literals, then the lookup for the next round.
	LITERAL
	MORE
	LITERAL
	MORE
	LITERAL
	JMP  loop

symbol:
	TESTL $0xe000, DX // end, link or invalid
	JZ    length
	BTL   $14, DX
	JCC   endOrInvalid

	// A link: the main table's bits are consumed, the rest of the code
	// is in the subtable.
	SUBINDEX
	CMPQ R13, $LIT_SIZE
	JAE  corrupt
	MOVL (R10)(R13*4), DX
	CONSUME
	BTL  $12, DX
	JCC  endOrInvalid
	LITERAL
	JMP  loop

endOrInvalid:
	BTL  $13, DX
	JCS  end
	BTL  $15, DX
	JCS  corrupt

length:
	VALUE(R14)

	CMPQ BX, $39
	JAE  distance
	REFILL

distance:
	MOVQ AX, DX
	ANDQ $255, DX
	MOVL DIST(R10)(DX*4), DX
	TESTL $0xe000, DX
	JZ   distanceEntry
	BTL  $14, DX
	JCC  distanceInvalid
	SHRQ $8, AX
	SUBQ $8, BX
	SUBINDEX
	CMPQ R13, $DIST_SIZE
	JAE  corrupt
	MOVL DIST(R10)(R13*4), DX

distanceInvalid:
	BTL  $15, DX
	JCS  corrupt

distanceEntry:
	CONSUME
	VALUE(R15)
	LOOKUP_LIT
	CMPQ R15, R9
	JGT  corrupt

	// Copy the match: from R13 to CX, up to R14.
	LEAQ (DI)(R9*1), CX
	MOVQ CX, R13
	SUBQ R15, R13
	ADDQ R14, R9
	LEAQ (DI)(R9*1), R14
	CMPQ R15, $8
	JB   short

	// Four words first, which most matches need no more than.
	MOVQ (R13), R15
	MOVQ R15, (CX)
	MOVQ 8(R13), R15
	MOVQ R15, 8(CX)
	MOVQ 16(R13), R15
	MOVQ R15, 16(CX)
	MOVQ 24(R13), R15
	MOVQ R15, 24(CX)
	ADDQ $32, R13
	ADDQ $32, CX
	CMPQ CX, R14
	JAE  loop

words:
	MOVQ (R13), R15
	MOVQ R15, (CX)
	ADDQ $8, R13
	ADDQ $8, CX
	CMPQ CX, R14
	JB   words
	JMP  loop

short:
	CMPQ R15, $1
	JNE  bytes

	// A distance of one repeats a byte.
	MOVBQZX (R13), R15
	MOVQ    $0x0101010101010101, R13
	IMULQ   R13, R15

repeat:
	MOVQ R15, (CX)
	ADDQ $8, CX
	CMPQ CX, R14
	JB   repeat
	JMP  loop

bytes:
	MOVB (R13), R15
	MOVB R15, (CX)
	INCQ R13
	INCQ CX
	CMPQ CX, R14
	JB   bytes
	JMP  loop

limit:
	MOVQ $0, R13
	JMP  done

end:
	MOVQ $1, R13
	JMP  done

corrupt:
	MOVQ $2, R13

done:
	MOVQ s+0(FP), R15
	MOVQ AX, 40(R15)
	MOVQ BX, 48(R15)
	MOVQ R8, 56(R15)
	MOVQ R9, 64(R15)
	MOVQ R13, ret+8(FP)
	RET
