"""Known gaps of ember.onnx on ONNX's backend node tests: case name -> why it fails.

Regenerate the candidates with ``python tests/onnx/_node_cases.py --gaps`` (on each backend) and check each
reason by hand. ``test_node.py`` fails when a case fails that is not listed here, and when a listed case
passes, so this list is always the exact set of failures.
"""

from __future__ import annotations

# fmt: off
_COMMON: list[tuple[str, list[str]]] = [
    ("ember.onnx's type table has no float8 entries yet; Ember has no float4/int4/int2", [
        'test_cast_FLOAT16_to_FLOAT4E2M1', 'test_cast_FLOAT16_to_FLOAT8E4M3FN',
        'test_cast_FLOAT16_to_FLOAT8E4M3FNUZ', 'test_cast_FLOAT16_to_FLOAT8E5M2',
        'test_cast_FLOAT16_to_FLOAT8E5M2FNUZ', 'test_cast_FLOAT16_to_INT2', 'test_cast_FLOAT16_to_INT4',
        'test_cast_FLOAT16_to_UINT2', 'test_cast_FLOAT16_to_UINT4', 'test_cast_FLOAT4E2M1_to_FLOAT',
        'test_cast_FLOAT4E2M1_to_FLOAT16', 'test_cast_FLOAT_to_FLOAT4E2M1', 'test_cast_FLOAT_to_FLOAT8E4M3FN',
        'test_cast_FLOAT_to_FLOAT8E4M3FNUZ', 'test_cast_FLOAT_to_FLOAT8E5M2', 'test_cast_FLOAT_to_FLOAT8E5M2FNUZ',
        'test_cast_FLOAT_to_INT2', 'test_cast_FLOAT_to_INT4', 'test_cast_FLOAT_to_UINT2',
        'test_cast_FLOAT_to_UINT4', 'test_cast_INT2_to_FLOAT', 'test_cast_INT2_to_FLOAT16',
        'test_cast_INT2_to_INT8', 'test_cast_INT4_to_FLOAT', 'test_cast_INT4_to_FLOAT16', 'test_cast_INT4_to_INT8',
        'test_cast_UINT2_to_FLOAT', 'test_cast_UINT2_to_FLOAT16', 'test_cast_UINT2_to_UINT8',
        'test_cast_UINT4_to_FLOAT', 'test_cast_UINT4_to_FLOAT16', 'test_cast_UINT4_to_UINT8',
        'test_cast_e8m0_FLOAT16_to_FLOAT8E8M0', 'test_cast_e8m0_FLOAT_to_FLOAT8E8M0',
        'test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FN', 'test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ',
        'test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2', 'test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ',
        'test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN', 'test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ',
        'test_cast_no_saturate_FLOAT_to_FLOAT8E5M2', 'test_cast_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ',
        'test_castlike_FLOAT16_to_FLOAT4E2M1', 'test_castlike_FLOAT16_to_FLOAT4E2M1_expanded',
        'test_castlike_FLOAT16_to_FLOAT8E4M3FN', 'test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ',
        'test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ_expanded', 'test_castlike_FLOAT16_to_FLOAT8E4M3FN_expanded',
        'test_castlike_FLOAT16_to_FLOAT8E5M2', 'test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ',
        'test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ_expanded', 'test_castlike_FLOAT16_to_FLOAT8E5M2_expanded',
        'test_castlike_FLOAT16_to_INT2', 'test_castlike_FLOAT16_to_INT2_expanded', 'test_castlike_FLOAT16_to_INT4',
        'test_castlike_FLOAT16_to_INT4_expanded', 'test_castlike_FLOAT16_to_UINT2',
        'test_castlike_FLOAT16_to_UINT2_expanded', 'test_castlike_FLOAT16_to_UINT4',
        'test_castlike_FLOAT16_to_UINT4_expanded', 'test_castlike_FLOAT4E2M1_to_FLOAT',
        'test_castlike_FLOAT4E2M1_to_FLOAT16', 'test_castlike_FLOAT4E2M1_to_FLOAT16_expanded',
        'test_castlike_FLOAT4E2M1_to_FLOAT_expanded', 'test_castlike_FLOAT_to_FLOAT4E2M1',
        'test_castlike_FLOAT_to_FLOAT4E2M1_expanded', 'test_castlike_FLOAT_to_FLOAT8E4M3FN',
        'test_castlike_FLOAT_to_FLOAT8E4M3FNUZ', 'test_castlike_FLOAT_to_FLOAT8E4M3FNUZ_expanded',
        'test_castlike_FLOAT_to_FLOAT8E4M3FN_expanded', 'test_castlike_FLOAT_to_FLOAT8E5M2',
        'test_castlike_FLOAT_to_FLOAT8E5M2FNUZ', 'test_castlike_FLOAT_to_FLOAT8E5M2FNUZ_expanded',
        'test_castlike_FLOAT_to_FLOAT8E5M2_expanded', 'test_castlike_FLOAT_to_INT2',
        'test_castlike_FLOAT_to_INT2_expanded', 'test_castlike_FLOAT_to_INT4',
        'test_castlike_FLOAT_to_INT4_expanded', 'test_castlike_FLOAT_to_UINT2',
        'test_castlike_FLOAT_to_UINT2_expanded', 'test_castlike_FLOAT_to_UINT4',
        'test_castlike_FLOAT_to_UINT4_expanded', 'test_castlike_INT2_to_FLOAT', 'test_castlike_INT2_to_FLOAT16',
        'test_castlike_INT2_to_FLOAT16_expanded', 'test_castlike_INT2_to_FLOAT_expanded',
        'test_castlike_INT2_to_INT8', 'test_castlike_INT2_to_INT8_expanded', 'test_castlike_INT4_to_FLOAT',
        'test_castlike_INT4_to_FLOAT16', 'test_castlike_INT4_to_FLOAT16_expanded',
        'test_castlike_INT4_to_FLOAT_expanded', 'test_castlike_INT4_to_INT8', 'test_castlike_INT4_to_INT8_expanded',
        'test_castlike_UINT2_to_FLOAT', 'test_castlike_UINT2_to_FLOAT16', 'test_castlike_UINT2_to_FLOAT16_expanded',
        'test_castlike_UINT2_to_FLOAT_expanded', 'test_castlike_UINT2_to_UINT8',
        'test_castlike_UINT2_to_UINT8_expanded', 'test_castlike_UINT4_to_FLOAT', 'test_castlike_UINT4_to_FLOAT16',
        'test_castlike_UINT4_to_FLOAT16_expanded', 'test_castlike_UINT4_to_FLOAT_expanded',
        'test_castlike_UINT4_to_UINT8', 'test_castlike_UINT4_to_UINT8_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN', 'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2', 'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2_expanded',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN', 'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN_expanded', 'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2_expanded', 'test_dequantizelinear_float4e2m1',
        'test_dequantizelinear_int2', 'test_dequantizelinear_int4', 'test_dequantizelinear_uint2',
        'test_dequantizelinear_uint4', 'test_quantizelinear_e4m3fn', 'test_quantizelinear_e5m2',
        'test_quantizelinear_float4e2m1', 'test_quantizelinear_int2', 'test_quantizelinear_int4',
        'test_quantizelinear_uint2', 'test_quantizelinear_uint4',
    ]),
    ("Ember's operators refuse uint16/32/64 (as PyTorch's CPU kernels)", [
        'test_add_uint16', 'test_add_uint32', 'test_add_uint64', 'test_bitshift_left_uint16',
        'test_bitshift_left_uint32', 'test_bitshift_left_uint64', 'test_bitshift_right_uint16',
        'test_bitshift_right_uint32', 'test_bitshift_right_uint64', 'test_bitwise_not_3d', 'test_div_uint16',
        'test_div_uint32', 'test_div_uint64', 'test_greater_equal_uint16', 'test_greater_equal_uint16_expanded',
        'test_greater_equal_uint32', 'test_greater_equal_uint32_expanded', 'test_greater_equal_uint64',
        'test_greater_equal_uint64_expanded', 'test_greater_uint16', 'test_greater_uint32', 'test_greater_uint64',
        'test_less_equal_uint16', 'test_less_equal_uint16_expanded', 'test_less_equal_uint32',
        'test_less_equal_uint32_expanded', 'test_less_equal_uint64', 'test_less_equal_uint64_expanded',
        'test_less_uint16', 'test_less_uint32', 'test_less_uint64', 'test_max_uint16', 'test_max_uint32',
        'test_max_uint64', 'test_min_uint16', 'test_min_uint32', 'test_min_uint64', 'test_mod_uint16',
        'test_mod_uint32', 'test_mod_uint64', 'test_sub_uint16', 'test_sub_uint32', 'test_sub_uint64',
    ]),
    ('Ember has no string dtype', [
        'test_ai_onnx_ml_label_encoder_string_int', 'test_ai_onnx_ml_label_encoder_string_int_no_default',
        'test_ai_onnx_ml_label_encoder_tensor_mapping', 'test_ai_onnx_ml_label_encoder_tensor_value_only_mapping',
        'test_equal_string', 'test_equal_string_broadcast', 'test_regex_full_match_basic',
        'test_regex_full_match_email_domain', 'test_regex_full_match_empty', 'test_string_concat',
        'test_string_concat_broadcasting', 'test_string_concat_empty_string', 'test_string_concat_utf8',
        'test_string_concat_zero_dimensional', 'test_string_split_basic',
        'test_string_split_consecutive_delimiters', 'test_string_split_empty_string_delimiter',
        'test_string_split_empty_tensor', 'test_string_split_maxsplit', 'test_string_split_no_delimiter',
        'test_strnormalizer_export_monday_casesensintive_lower',
        'test_strnormalizer_export_monday_casesensintive_nochangecase',
        'test_strnormalizer_export_monday_casesensintive_upper', 'test_strnormalizer_export_monday_empty_output',
        'test_strnormalizer_export_monday_insensintive_upper_twodim', 'test_strnormalizer_nostopwords_nochangecase',
    ]),
    ('CausalConvWithState: onnx builds an empty function body for it (no converter)', [
        'test_causal_conv_with_state_b1_c1_degenerate', 'test_causal_conv_with_state_basic',
        'test_causal_conv_with_state_decode_step', 'test_causal_conv_with_state_fp16',
        'test_causal_conv_with_state_kernel_size_one', 'test_causal_conv_with_state_short_input_no_past_state',
        'test_causal_conv_with_state_silu', 'test_causal_conv_with_state_silu_fp16',
        'test_causal_conv_with_state_silu_with_past_state', 'test_causal_conv_with_state_swish_alias',
        'test_causal_conv_with_state_with_bias', 'test_causal_conv_with_state_with_bias_and_past_state',
        'test_causal_conv_with_state_with_past_state',
    ]),
    ('ImageDecoder needs an image codec (JPEG/PNG/...): not implemented', [
        'test_image_decoder_decode_bmp_rgb', 'test_image_decoder_decode_jpeg2k_rgb',
        'test_image_decoder_decode_jpeg_bgr', 'test_image_decoder_decode_jpeg_grayscale',
        'test_image_decoder_decode_jpeg_rgb', 'test_image_decoder_decode_png_rgb',
        'test_image_decoder_decode_pnm_rgb', 'test_image_decoder_decode_tiff_rgb',
        'test_image_decoder_decode_webp_rgb',
    ]),
    ("bfloat16 attention: a unit in the last place apart from ONNX's reference, which rounds between its steps", [
        'test_attention_3d_causal_bf16', 'test_attention_3d_causal_bf16_expanded', 'test_attention_4d_causal_bf16',
        'test_attention_4d_causal_bf16_expanded', 'test_attention_4d_causal_padded_kv_bf16',
        'test_attention_4d_causal_padded_kv_bf16_expanded', 'test_attention_4d_padded_kv_bf16',
        'test_attention_4d_padded_kv_bf16_expanded',
    ]),
    ("random draws: ONNX's expected values come from NumPy's generator (RandomUniformLike unported)", [
        'test_bernoulli', 'test_bernoulli_double', 'test_bernoulli_double_expanded', 'test_bernoulli_expanded',
        'test_bernoulli_seed', 'test_bernoulli_seed_expanded',
    ]),
    ("Dropout in training mode: the expected mask comes from NumPy's random generator", [
        'test_training_dropout', 'test_training_dropout_default', 'test_training_dropout_default_mask',
        'test_training_dropout_mask',
    ]),
    ('operator TreeEnsemble is not implemented in ember.onnx', [
        'test_ai_onnx_ml_tree_ensemble_set_membership', 'test_ai_onnx_ml_tree_ensemble_single_tree',
    ]),
    ('the expected output has float32 rounding (1.9e-7 where the exact value is 0) over atol 1e-7', [
        'test_dft_inverse', 'test_dft_inverse_opset19',
    ]),
]

#: failures on the NumPy and CuPy backends only
_NUMPY: list[tuple[str, list[str]]] = [
    ("bfloat16 attention: a unit in the last place apart from ONNX's reference, which rounds between its steps", [
        'test_attention_4d_attn_mask_causal_bf16', 'test_attention_4d_attn_mask_causal_bf16_expanded',
    ]),
    ("Ember refuses operators on uint16/32/64 on NumPy (as most of PyTorch's CPU kernels); torch has these", [
        'test_bitwise_and_ui64_bcast_3v1d', 'test_bitwise_or_ui64_bcast_3v1d', 'test_bitwise_xor_ui64_bcast_3v1d',
        'test_equal_uint16', 'test_equal_uint32', 'test_equal_uint64', 'test_mul_uint16', 'test_mul_uint32',
        'test_mul_uint64',
    ]),
]

#: failures on the CuPy backend only (it has no bfloat16)
_CUPY: list[tuple[str, list[str]]] = [
    ('bfloat16 is not available on the CuPy backend (torch and NumPy have it)', [
        'test_cast_BFLOAT16_to_FLOAT', 'test_cast_FLOAT_to_BFLOAT16', 'test_castlike_BFLOAT16_to_FLOAT',
        'test_castlike_BFLOAT16_to_FLOAT_expanded', 'test_castlike_FLOAT_to_BFLOAT16',
        'test_castlike_FLOAT_to_BFLOAT16_expanded', 'test_celu_bfloat16', 'test_celu_bfloat16_expanded',
        'test_compress_bfloat16', 'test_einsum_batch_matmul_bfloat16', 'test_einsum_sum_bfloat16',
        'test_einsum_transpose_bfloat16', 'test_onehot_with_bfloat16_values',
        'test_range_bfloat16_type_positive_delta', 'test_range_bfloat16_type_positive_delta_expanded',
        'test_reversesequence_bfloat16', 'test_unique_bfloat16_sorted_without_axis',
    ]),
]

#: failures on the torch backend only
_TORCH: list[tuple[str, list[str]]] = [
    ('the torch backend cannot take the ml_dtypes float8 array ember.onnx reads (torch.from_numpy refuses it)', [
        'test_cast_FLOAT8E4M3FNUZ_to_FLOAT', 'test_cast_FLOAT8E4M3FNUZ_to_FLOAT16',
        'test_cast_FLOAT8E4M3FN_to_FLOAT', 'test_cast_FLOAT8E4M3FN_to_FLOAT16', 'test_cast_FLOAT8E5M2FNUZ_to_FLOAT',
        'test_cast_FLOAT8E5M2FNUZ_to_FLOAT16', 'test_cast_FLOAT8E5M2_to_FLOAT', 'test_cast_FLOAT8E5M2_to_FLOAT16',
        'test_cast_e8m0_FLOAT8E8M0_to_FLOAT', 'test_cast_e8m0_FLOAT8E8M0_to_FLOAT16',
        'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT', 'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16',
        'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16_expanded', 'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT_expanded',
        'test_castlike_FLOAT8E4M3FN_to_FLOAT', 'test_castlike_FLOAT8E4M3FN_to_FLOAT16',
        'test_castlike_FLOAT8E4M3FN_to_FLOAT16_expanded', 'test_castlike_FLOAT8E4M3FN_to_FLOAT_expanded',
        'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT', 'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16',
        'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16_expanded', 'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT_expanded',
        'test_castlike_FLOAT8E5M2_to_FLOAT', 'test_castlike_FLOAT8E5M2_to_FLOAT16',
        'test_castlike_FLOAT8E5M2_to_FLOAT16_expanded', 'test_castlike_FLOAT8E5M2_to_FLOAT_expanded',
        'test_dequantizelinear_e4m3fn', 'test_dequantizelinear_e4m3fn_float16',
        'test_dequantizelinear_e4m3fn_zero_point', 'test_dequantizelinear_e5m2',
    ]),
]

# fmt: on


def gaps(backend: str) -> dict[str, str]:
    """Case name -> reason, for ``backend`` ("numpy", "torch", ...)."""
    extra = {"numpy": _NUMPY, "cupy": _NUMPY + _CUPY, "torch": _TORCH}.get(backend, [])
    return {name: reason for reason, names in _COMMON + extra for name in names}
