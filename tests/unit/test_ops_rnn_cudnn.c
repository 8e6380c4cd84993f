/* test_ops_rnn_cudnn.c - LSTM and GRU on cuDNN (--rnn-kernel cudnn, the
 * default): the tensors CudnnRnnBackward0 saves (derivatives.yaml's entry
 * _cudnn_rnn: input, hx, cx, output, the reserve space; the weights are
 * the parameters themselves) and cuDNN's reserve space and workspace, by
 * the estimate src/ops/ops_rnn_cudnn.c documents:
 *   reserve   = T*B * (D*(L*k*H + (L-1)*Hr) + (dropout ? (L-1)*D*Hr : 0)) * bytes,
 *               k = 5 LSTM (4 gates + c), 6 GRU (3 gates + 3 hidden products)
 *   workspace = L*D*B*(G+2)*H * bytes (and the backward's temporaries:
 *               dx, dhx, dcx, the zero gradients of h_n and c_n)
 * fitted to the reserve sizes Natalia Gimelshein printed in
 * pytorch/pytorch#2895. Figures by hand, never memest's output. */
#include "check.h"
#include "ops_test.h"

/* Sequence-first x [T=5, B=3, 8] (fp32, no grad). */
#define SEQ "{'inputs': [{'name': 'x', 'shape': [5, 8], 'batch_dim': 1}], 'layers': ["

/* nn.LSTM(8, 8) on [5, 3, 8], fp32. Saved (bytes):
 *   input x [5, 3, 8]                  5*3*8*4        =  480
 *   hx, cx [1, 3, 8]                   2 * 1*3*8*4    =  192
 *   output [5, 3, 8]                   5*3*8*4        =  480
 *   reserve T*B*(1*(1*5*8 + 0*8))*4    15*40*4        = 2400
 *   total                                               3552
 * (the native path saves 7296: test_ops_rnn.c). Forward workspace
 * 1*1*3*(4+2)*8*4 = 576; the backward's: that 576, dhx and dcx and the zero
 * gradients of h_n and c_n 4 * 96 = 384, and dx, which
 * _cudnn_rnn_backward_input makes though x needs none, 480: 1440. MACs as
 * native: 15*(256 + 256). */
static void test_lstm_cudnn(void)
{
    struct t_model t;
    LOAD(&t, SEQ "{'name': 'lstm', 'type': 'lstm', 'hidden_size': 8}]}", 3);
    CHECK_EQ_U64(t_saved(&t, "lstm"), 480 + 192 + 480 + 2400);
    CHECK_EQ_U64(t_nsaved(&t, "lstm"), 5); /* x, hx, cx, output, reserve */
    CHECK(t_saves_storage(&t, "lstm", t_storage(&t, "x", 0)));
    CHECK(t_saves_storage(&t, "lstm", t_storage(&t, "lstm", 0)));
    CHECK_EQ_U64(t_info(&t, "lstm")->work_bytes, 576);
    CHECK_EQ_U64(t_info(&t, "lstm")->bwd_work_bytes, 576 + 384 + 480);
    CHECK(t_fwd(&t, "lstm") == 15.0 * 512);
    t_free(&t);
}

/* nn.GRU(8, 8) on [5, 3, 8]: input 480, hx 96 (no cx), output 480,
 * reserve 15*(6*8)*4 = 2880: 3936 (native: 6240). Workspace
 * 1*1*3*(3+2)*8*4 = 480. */
static void test_gru_cudnn(void)
{
    struct t_model t;
    LOAD(&t, SEQ "{'name': 'gru', 'type': 'gru', 'hidden_size': 8}]}", 3);
    CHECK_EQ_U64(t_saved(&t, "gru"), 480 + 96 + 480 + 2880);
    CHECK_EQ_U64(t_nsaved(&t, "gru"), 4);
    CHECK_EQ_U64(t_info(&t, "gru")->work_bytes, 480);
    t_free(&t);
}

/* nn.LSTM(10, 20, proj_size=5) on [T=3, B=2, 10]: input 3*2*10*4 = 240,
 * hx [1, 2, 5] 40, cx [1, 2, 20] 160, output [3, 2, 5] 120, reserve
 * 6*(1*(1*6*20 + 0))*4 = 2880 (k = 6: the cell's h before W_hr): 3440.
 * nn.RNN(8, 8) on [5, 3, 8], one layer: k = 0 and no inner layer, so no
 * reserve: input 480, hx 96, output 480: 1056. */
static void test_proj_and_rnn_cudnn(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 10], 'batch_dim': 1}],"
         " 'layers': [{'name': 'lstm', 'type': 'lstm', 'hidden_size': 20, 'proj_size': 5}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "lstm"), 240 + 40 + 160 + 120 + 2880);
    t_free(&t);
    LOAD(&t, SEQ "{'name': 'rnn', 'type': 'rnn', 'hidden_size': 8}]}", 3);
    CHECK_EQ_U64(t_saved(&t, "rnn"), 480 + 96 + 480);
    CHECK_EQ_U64(t_nsaved(&t, "rnn"), 3);
    t_free(&t);
}

/* nn.LSTM(10, 20, 2, bidirectional, batch_first) on [B=2, T=7, 10]:
 *   input 2*7*10*4 = 560; hx, cx [4, 2, 20] 2*640 = 1280; output
 *   [2, 7, 40] 2240; reserve 14*(2*(2*5*20 + 1*20))*4 = 14*440*4 = 24640:
 *   28720. With dropout 0.5: + the dropped layer-1 input 14*(1*2*20)*4 =
 *   2240. */
static void test_lstm_cudnn_stacked(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [7, 10]}],"
         " 'layers': [{'name': 'lstm', 'type': 'lstm', 'hidden_size': 20,"
         "             'num_layers': 2, 'bidirectional': true, 'batch_first': true},"
         "            {'name': 'lstm_do', 'type': 'lstm', 'inputs': ['x'], 'hidden_size': 20,"
         "             'num_layers': 2, 'bidirectional': true, 'batch_first': true,"
         "             'dropout': 0.5}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "lstm"), 560 + 1280 + 2240 + 24640);
    CHECK_EQ_U64(t_saved(&t, "lstm_do"), 560 + 1280 + 2240 + 24640 + 2240);
    t_free(&t);
}

/* The figures of pytorch/pytorch#2895 (cuDNN reserve sizes printed by
 * ngimel): 4-layer 320-unit models on 123 features, fp32, reserve
 * 736,000,000 B (LSTM) and 864,000,000 B (GRU); T*B = 25,000 (here T=250,
 * B=100) is the fit's one unknown. Saved besides the reserve: input
 * 250*100*123*4 = 12,300,000; hx (and cx) [4, 100, 320] 512,000 each;
 * output 250*100*320*4 = 32,000,000. */
static void test_issue_2895_fit(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [250, 123], 'batch_dim': 1}],"
         " 'layers': [{'name': 'lstm', 'type': 'lstm', 'hidden_size': 320, 'num_layers': 4},"
         "            {'name': 'gru', 'type': 'gru', 'inputs': ['x'], 'hidden_size': 320,"
         "             'num_layers': 4}]}",
         100);
    CHECK_EQ_U64(t_saved(&t, "lstm"), 736000000ull + 12300000 + 2 * 512000 + 32000000);
    CHECK_EQ_U64(t_saved(&t, "gru"), 864000000ull + 12300000 + 512000 + 32000000);
    t_free(&t);
}

/* Under autocast to fp16 (AutocastRNN.cpp casts the weights and
 * re-flattens them into one buffer the op keeps): the LSTM of
 * test_lstm_cudnn saves the weights' copies (256 + 256 + 32 + 32)*2 =
 * 1152, x's fp16 copy 5*3*8*2 = 240, hx and cx 2 * 1*3*8*2 = 96, the
 * output 240 and the reserve in fp16 15*40*2 = 1200: 2928. */
static void test_lstm_cudnn_autocast(void)
{
    struct t_model t;
    LOAD_OPTS(&t, SEQ "{'name': 'lstm', 'type': 'lstm', 'hidden_size': 8}]}", .batch = 3,
              .dtype = MEMEST_F32, .amp = true, .amp_dtype = MEMEST_F16);
    CHECK_EQ_U64(t_saved(&t, "lstm"), 1152 + 240 + 96 + 240 + 1200);
    t_free(&t);
}

/* --rnn-kernel native keeps the native saved set (7296 for the LSTM of
 * test_lstm_cudnn, counted in test_ops_rnn.c). */
static void test_native_option(void)
{
    struct t_model t;
    LOAD_OPTS(&t, SEQ "{'name': 'lstm', 'type': 'lstm', 'hidden_size': 8}]}", .batch = 3,
              .dtype = MEMEST_F32, .rnn_kernel = MEMEST_RNN_NATIVE);
    CHECK_EQ_U64(t_saved(&t, "lstm"), 7296);
    t_free(&t);
}

int main(void)
{
    test_lstm_cudnn();
    test_gru_cudnn();
    test_lstm_cudnn_stacked();
    test_proj_and_rnn_cudnn();
    test_issue_2895_fit();
    test_lstm_cudnn_autocast();
    test_native_option();
    return CHECK_DONE();
}
