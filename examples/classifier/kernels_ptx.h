// PTX of kernels.cu (see there how to regenerate it). Used by classifier.cc on real GPUs.
#ifndef SLUICE_EXAMPLES_CLASSIFIER_KERNELS_PTX_H_
#define SLUICE_EXAMPLES_CLASSIFIER_KERNELS_PTX_H_

inline constexpr char kKernelsPtx[] = R"PTX(
.version 6.4
.target sm_50
.address_size 64

	// .globl	sluice_dense

.visible .entry sluice_dense(
	.param .u64 sluice_dense_param_0,
	.param .u64 sluice_dense_param_1,
	.param .u64 sluice_dense_param_2,
	.param .u64 sluice_dense_param_3,
	.param .u32 sluice_dense_param_4,
	.param .u32 sluice_dense_param_5,
	.param .u32 sluice_dense_param_6,
	.param .u32 sluice_dense_param_7
)
{
	.reg .pred 	%p<7>;
	.reg .f32 	%f<10>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<17>;


	ld.param.u64 	%rd3, [sluice_dense_param_0];
	ld.param.u64 	%rd4, [sluice_dense_param_1];
	ld.param.u64 	%rd5, [sluice_dense_param_2];
	ld.param.u64 	%rd6, [sluice_dense_param_3];
	ld.param.u32 	%r10, [sluice_dense_param_4];
	ld.param.u32 	%r7, [sluice_dense_param_5];
	ld.param.u32 	%r8, [sluice_dense_param_6];
	ld.param.u32 	%r9, [sluice_dense_param_7];
	mov.u32 	%r11, %ntid.x;
	mov.u32 	%r12, %ctaid.x;
	mov.u32 	%r13, %tid.x;
	mad.lo.s32 	%r1, %r12, %r11, %r13;
	mul.lo.s32 	%r14, %r8, %r10;
	setp.ge.u32 	%p1, %r1, %r14;
	@%p1 bra 	$L__BB0_5;

	cvta.to.global.u64 	%rd7, %rd5;
	rem.u32 	%r2, %r1, %r8;
	mul.wide.u32 	%rd8, %r2, 4;
	add.s64 	%rd9, %rd7, %rd8;
	ld.global.f32 	%f9, [%rd9];
	setp.eq.s32 	%p2, %r7, 0;
	@%p2 bra 	$L__BB0_4;

	div.u32 	%r16, %r1, %r8;
	mul.lo.s32 	%r3, %r16, %r7;
	mul.lo.s32 	%r4, %r2, %r7;
	cvta.to.global.u64 	%rd1, %rd4;
	cvta.to.global.u64 	%rd2, %rd3;
	mov.u32 	%r19, 0;

$L__BB0_3:
	.pragma "nounroll";
	add.s32 	%r17, %r19, %r3;
	mul.wide.u32 	%rd10, %r17, 4;
	add.s64 	%rd11, %rd2, %rd10;
	add.s32 	%r18, %r19, %r4;
	mul.wide.u32 	%rd12, %r18, 4;
	add.s64 	%rd13, %rd1, %rd12;
	ld.global.f32 	%f5, [%rd13];
	ld.global.f32 	%f6, [%rd11];
	fma.rn.f32 	%f9, %f6, %f5, %f9;
	add.s32 	%r19, %r19, 1;
	setp.lt.u32 	%p3, %r19, %r7;
	@%p3 bra 	$L__BB0_3;

$L__BB0_4:
	setp.lt.f32 	%p4, %f9, 0f00000000;
	setp.ne.s32 	%p5, %r9, 0;
	and.pred  	%p6, %p5, %p4;
	selp.f32 	%f7, 0f00000000, %f9, %p6;
	cvta.to.global.u64 	%rd14, %rd6;
	mul.wide.u32 	%rd15, %r1, 4;
	add.s64 	%rd16, %rd14, %rd15;
	st.global.f32 	[%rd16], %f7;

$L__BB0_5:
	ret;

}

)PTX";

#endif  // SLUICE_EXAMPLES_CLASSIFIER_KERNELS_PTX_H_
