// PTX of kernels.cu (see there how to regenerate it). Used by trainer.cc on real GPUs.
#ifndef SLUICE_EXAMPLES_TRAINER_KERNELS_PTX_H_
#define SLUICE_EXAMPLES_TRAINER_KERNELS_PTX_H_

inline constexpr char kKernelsPtx[] = R"PTX(
.version 6.4
.target sm_50
.address_size 64

	// .globl	sluice_residual

.visible .entry sluice_residual(
	.param .u64 sluice_residual_param_0,
	.param .u64 sluice_residual_param_1,
	.param .u64 sluice_residual_param_2,
	.param .u64 sluice_residual_param_3,
	.param .u32 sluice_residual_param_4,
	.param .u32 sluice_residual_param_5
)
{
	.reg .pred 	%p<4>;
	.reg .f32 	%f<10>;
	.reg .b32 	%r<15>;
	.reg .b64 	%rd<19>;


	ld.param.u64 	%rd6, [sluice_residual_param_0];
	ld.param.u64 	%rd7, [sluice_residual_param_1];
	ld.param.u64 	%rd8, [sluice_residual_param_2];
	ld.param.u64 	%rd9, [sluice_residual_param_3];
	ld.param.u32 	%r8, [sluice_residual_param_4];
	ld.param.u32 	%r7, [sluice_residual_param_5];
	mov.u32 	%r9, %ntid.x;
	mov.u32 	%r10, %ctaid.x;
	mov.u32 	%r11, %tid.x;
	mad.lo.s32 	%r1, %r10, %r9, %r11;
	setp.ge.u32 	%p1, %r1, %r8;
	@%p1 bra 	$L__BB0_5;

	cvta.to.global.u64 	%rd10, %rd7;
	cvt.u64.u32 	%rd1, %r1;
	mul.wide.u32 	%rd11, %r1, 4;
	add.s64 	%rd12, %rd10, %rd11;
	ld.global.f32 	%f5, [%rd12];
	neg.f32 	%f9, %f5;
	setp.eq.s32 	%p2, %r7, 0;
	@%p2 bra 	$L__BB0_4;

	mul.lo.s32 	%r13, %r1, %r7;
	cvta.to.global.u64 	%rd18, %rd8;
	cvta.to.global.u64 	%rd3, %rd6;
	mov.u32 	%r14, 0;

$L__BB0_3:
	.pragma "nounroll";
	mul.wide.u32 	%rd13, %r13, 4;
	add.s64 	%rd14, %rd3, %rd13;
	ld.global.f32 	%f6, [%rd18];
	ld.global.f32 	%f7, [%rd14];
	fma.rn.f32 	%f9, %f7, %f6, %f9;
	add.s64 	%rd18, %rd18, 4;
	add.s32 	%r13, %r13, 1;
	add.s32 	%r14, %r14, 1;
	setp.lt.u32 	%p3, %r14, %r7;
	@%p3 bra 	$L__BB0_3;

$L__BB0_4:
	cvta.to.global.u64 	%rd15, %rd9;
	shl.b64 	%rd16, %rd1, 2;
	add.s64 	%rd17, %rd15, %rd16;
	st.global.f32 	[%rd17], %f9;

$L__BB0_5:
	ret;

}
	// .globl	sluice_sgd_update
.visible .entry sluice_sgd_update(
	.param .u64 sluice_sgd_update_param_0,
	.param .u64 sluice_sgd_update_param_1,
	.param .u64 sluice_sgd_update_param_2,
	.param .u32 sluice_sgd_update_param_3,
	.param .u32 sluice_sgd_update_param_4,
	.param .f32 sluice_sgd_update_param_5
)
{
	.reg .pred 	%p<4>;
	.reg .f32 	%f<17>;
	.reg .b32 	%r<14>;
	.reg .b64 	%rd<14>;


	ld.param.u64 	%rd5, [sluice_sgd_update_param_0];
	ld.param.u64 	%rd6, [sluice_sgd_update_param_1];
	ld.param.u64 	%rd7, [sluice_sgd_update_param_2];
	ld.param.u32 	%r6, [sluice_sgd_update_param_3];
	ld.param.u32 	%r7, [sluice_sgd_update_param_4];
	ld.param.f32 	%f5, [sluice_sgd_update_param_5];
	mov.u32 	%r8, %ntid.x;
	mov.u32 	%r9, %ctaid.x;
	mov.u32 	%r10, %tid.x;
	mad.lo.s32 	%r1, %r9, %r8, %r10;
	setp.ge.u32 	%p1, %r1, %r7;
	@%p1 bra 	$L__BB1_6;

	setp.eq.s32 	%p2, %r6, 0;
	mov.f32 	%f16, 0f00000000;
	@%p2 bra 	$L__BB1_5;

	cvta.to.global.u64 	%rd1, %rd5;
	cvta.to.global.u64 	%rd13, %rd6;
	mov.f32 	%f15, 0f00000000;
	mov.u32 	%r13, 0;
	mov.u32 	%r12, %r1;

$L__BB1_3:
	.pragma "nounroll";
	mul.wide.u32 	%rd8, %r12, 4;
	add.s64 	%rd9, %rd1, %rd8;
	ld.global.f32 	%f8, [%rd9];
	ld.global.f32 	%f9, [%rd13];
	fma.rn.f32 	%f15, %f9, %f8, %f15;
	add.s64 	%rd13, %rd13, 4;
	add.s32 	%r12, %r12, %r7;
	add.s32 	%r13, %r13, 1;
	setp.lt.u32 	%p3, %r13, %r6;
	@%p3 bra 	$L__BB1_3;

	add.f32 	%f16, %f15, %f15;

$L__BB1_5:
	cvta.to.global.u64 	%rd10, %rd7;
	mul.wide.u32 	%rd11, %r1, 4;
	add.s64 	%rd12, %rd10, %rd11;
	cvt.rn.f32.u32 	%f10, %r6;
	div.rn.f32 	%f11, %f16, %f10;
	mul.f32 	%f12, %f11, %f5;
	ld.global.f32 	%f13, [%rd12];
	sub.f32 	%f14, %f13, %f12;
	st.global.f32 	[%rd12], %f14;

$L__BB1_6:
	ret;

}

)PTX";

#endif  // SLUICE_EXAMPLES_TRAINER_KERNELS_PTX_H_
