/* test_ops_rnn.c - LSTM, GRU, RNN: parameters (PyTorch's names and
 * shapes), outputs, and the tensors the native CUDA path saves
 * (--rnn-kernel native, see src/ops/ops_rnn.c), against hand counts; the
 * cuDNN path's saved set (the default) is test_ops_rnn_cudnn.c's. */
#include "check.h"
#include "ops_test.h"

/* The native kernels (cuDNN disabled). */
#define LOADN(t, json, nbatch)                                                                 \
    LOAD_OPTS((t), (json), .batch = (nbatch), .dtype = MEMEST_F32,                             \
              .rnn_kernel = MEMEST_RNN_NATIVE)

/* Sequence-first x [T=5, B=3, 8] (fp32, no grad). */
#define SEQ "{'inputs': [{'name': 'x', 'shape': [5, 8], 'batch_dim': 1}], 'layers': ["

/* nn.LSTM(8, 8): weight_ih_l0 [32, 8] = 256, weight_hh_l0 [32, 8] = 256,
 * bias_ih_l0 32, bias_hh_l0 32: 576. Outputs [5, 3, 8], h_n and c_n
 * [1, 3, 8]. Saved (bytes):
 *   x (x_t views for W_ih)            5*3*8*4  =  480
 *   h0, c0 zeros [1, 3, 8]            2 * 96   =  192
 *   input_gates, hidden_gates, workspace [B, 4H] per step
 *                                     3 * 5*3*32*4 = 5760
 *   cy [B, H] per step                5*3*8*4  =  480
 *   h_{t-1}, t = 1..4 [B, H]          4*3*8*4  =  384
 *   total                                         7296
 * MACs: per step and sample 4H*in + 4H*H = 256 + 256; * T*B = 15: 7680.
 * Backward: grad(W_ih) 15*256 = 3840, grad(W_hh) 3840, grad(h_{t-1}) for
 * steps 1..4: 4*3*256 = 3072 (x needs no grad): 10752. */
static void test_lstm(void)
{
    struct t_model t;
    LOADN(&t, SEQ "{'name': 'lstm', 'type': 'lstm', 'hidden_size': 8}]}", 3);
    CHECK_EQ_U64(t_param(&t, "lstm", "weight_ih_l0"), 256);
    CHECK_EQ_U64(t_param(&t, "lstm", "weight_hh_l0"), 256);
    CHECK_EQ_U64(t_param(&t, "lstm", "bias_ih_l0"), 32);
    CHECK_EQ_U64(t_param(&t, "lstm", "bias_hh_l0"), 32);
    CHECK_EQ_U64(t_params_total(&t, "lstm"), 576);
    CHECK_EQ_U64(t_nout(&t, "lstm"), 3);
    CHECK_STR_EQ(t_shape(&t, "lstm", 0), "[5, 3, 8]");
    CHECK_STR_EQ(t_shape(&t, "lstm", 1), "[1, 3, 8]");
    CHECK_STR_EQ(t_shape(&t, "lstm", 2), "[1, 3, 8]");
    CHECK_EQ_U64(t_saved(&t, "lstm"), 7296);
    CHECK(t_saves_storage(&t, "lstm", t_storage(&t, "x", 0)));
    CHECK(t_fwd(&t, "lstm") == 7680.0);
    CHECK(t_bwd(&t, "lstm") == 10752.0);
    t_free(&t);
}

/* nn.LSTM(10, 20, 2, bidirectional, batch_first) on x [B=2, T=7, 10]:
 * per direction, layer 0: 80*10 + 80*20 + 2*80 = 2560; layer 1 (input
 * 2*20): 80*40 + 80*20 + 160 = 4960; total 2*(2560 + 4960) = 15040.
 * Outputs [2, 7, 40], h_n and c_n [4, 2, 20]. Saved:
 *   x                                2*7*10*4 =   560
 *   h0, c0 [4, 2, 20]                2 * 640  =  1280
 *   per layer and direction: 3 * [7, 2, 80] (13440) + cy [7, 2, 20] (1120)
 *     + h_{t-1} [6, 2, 20] (960) = 15520; 4 of them = 62080
 *   layer 1's input [7, 2, 40]                 2240
 *   total                                     66160
 * With dropout 0.5 between the layers: + the bool mask [7, 2, 40] = 560. */
static void test_lstm_stacked_bidirectional(void)
{
    struct t_model t;
    LOADN(&t,
         "{'inputs': [{'name': 'x', 'shape': [7, 10]}],"
         " 'layers': [{'name': 'lstm', 'type': 'lstm', 'input_size': 10, 'hidden_size': 20,"
         "             'num_layers': 2, 'bidirectional': true, 'batch_first': true},"
         "            {'name': 'lstm_do', 'type': 'lstm', 'inputs': ['x'], 'hidden_size': 20,"
         "             'num_layers': 2, 'bidirectional': true, 'batch_first': true,"
         "             'dropout': 0.5}]}",
         2);
    CHECK_EQ_U64(t_params_total(&t, "lstm"), 15040);
    CHECK_EQ_U64(t_param(&t, "lstm", "weight_ih_l1_reverse"), 80 * 40);
    CHECK_STR_EQ(t_shape(&t, "lstm", 0), "[2, 7, 40]");
    CHECK_STR_EQ(t_shape(&t, "lstm", 1), "[4, 2, 20]");
    CHECK_STR_EQ(t_shape(&t, "lstm", 2), "[4, 2, 20]");
    CHECK_EQ_U64(t_saved(&t, "lstm"), 66160);
    CHECK_EQ_U64(t_saved(&t, "lstm_do"), 66160 + 560);
    t_free(&t);
}

/* nn.LSTM(10, 20, proj_size=5) on [T=3, B=2, 10]: W_ih [80, 10] = 800,
 * W_hh [80, 5] = 400, biases 160, W_hr [5, 20] = 100: 1460. Outputs
 * [3, 2, 5], h_n [1, 2, 5], c_n [1, 2, 20]. Saved: x 240, h0 [1, 2, 5] 40,
 * c0 [1, 2, 20] 160, gates+workspace 3 * [3, 2, 80] = 5760, cy [3, 2, 20]
 * 480, h_{t-1} [2, 2, 5] 80, the cell's hy before W_hr [3, 2, 20] 480:
 * 7240. */
static void test_lstm_proj(void)
{
    struct t_model t;
    LOADN(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 10], 'batch_dim': 1}],"
         " 'layers': [{'name': 'lstm', 'type': 'lstm', 'hidden_size': 20, 'proj_size': 5}]}",
         2);
    CHECK_EQ_U64(t_params_total(&t, "lstm"), 1460);
    CHECK_EQ_U64(t_param(&t, "lstm", "weight_hr_l0"), 100);
    CHECK_STR_EQ(t_shape(&t, "lstm", 0), "[3, 2, 5]");
    CHECK_STR_EQ(t_shape(&t, "lstm", 1), "[1, 2, 5]");
    CHECK_STR_EQ(t_shape(&t, "lstm", 2), "[1, 2, 20]");
    CHECK_EQ_U64(t_saved(&t, "lstm"), 7240);
    t_free(&t);
}

/* nn.GRU(8, 8): 3*8*8 * 2 + 2*24 = 432. Saved: x 480, h0 96, input and
 * hidden gates [5, 3, 24] 2 * 1440, workspace [5, 3, 40] 2400, h_{t-1}
 * [4, 3, 8] 384: 6240. nn.RNN(8, 8): 64 + 64 + 16 = 144; saved: x 480,
 * h0 96, each step's tanh output [5, 3, 8] 480: 1056; MACs 15*(64 + 64). */
static void test_gru_rnn(void)
{
    struct t_model t;
    LOADN(&t,
         SEQ "{'name': 'gru', 'type': 'gru', 'hidden_size': 8},"
             "{'name': 'rnn', 'type': 'rnn', 'inputs': ['x'], 'hidden_size': 8,"
             " 'nonlinearity': 'relu'}]}",
         3);
    CHECK_EQ_U64(t_params_total(&t, "gru"), 432);
    CHECK_EQ_U64(t_nout(&t, "gru"), 2);
    CHECK_EQ_U64(t_saved(&t, "gru"), 6240);
    CHECK_EQ_U64(t_params_total(&t, "rnn"), 144);
    CHECK_EQ_U64(t_saved(&t, "rnn"), 1056);
    CHECK(t_fwd(&t, "rnn") == 15.0 * 128);
    t_free(&t);
}

static void test_rnn_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t, SEQ "{'type': 'lstm', 'input_size': 9, 'hidden_size': 8}]}", 3),
                   "input_size is 9 but the input has 8 features");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, SEQ "{'type': 'lstm', 'hidden_size': 8, 'proj_size': 8}]}", 3),
                   "proj_size (8) has to be smaller than hidden_size (8)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [5, 8, 2]}],"
                           " 'layers': [{'type': 'gru', 'hidden_size': 8}]}",
                           3),
                   "GRU expects a 3-D (T, B, input_size) input");
    t_free(&t);
}

int main(void)
{
    test_lstm();
    test_lstm_stacked_bidirectional();
    test_lstm_proj();
    test_gru_rnn();
    test_rnn_errors();
    return CHECK_DONE();
}
