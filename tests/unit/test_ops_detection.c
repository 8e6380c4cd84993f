/* test_ops_detection.c - the detection ops (src/ops/ops_detection.c) on
 * small shapes: outputs, parameters and buffers, the saved tensors, the
 * MACs and the forward workspace, by hand from torchvision 0.14's code (the
 * statements quoted in ops_detection.c; the saved tensors are those
 * tests/reference/frcnn_figures.json lists for the full model, at these
 * sizes), and the errors. The whole model is checked against PyTorch by
 * ctest detection.fasterrcnn_resnet50_fpn. */
#include "check.h"
#include "ops_test.h"

/* FrozenBatchNorm2d(4) after a trainable conv (its input requires grad) and
 * on the model input (it does not): 4 buffers [4], no parameters; x * scale
 * saves scale [1, 4, 1, 1] = 16 bytes; the product [2, 4, 5, 5] (800 bytes)
 * is the workspace. */
static void test_frozenbn(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 5, 5]}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 4, 'kernel_size': 1},"
         "  {'name': 'bn', 'type': 'frozenbatchnorm2d'},"
         "  {'name': 'bn0', 'type': 'frozenbatchnorm2d', 'inputs': ['x'], 'num_features': 4}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "bn", 0), "[2, 4, 5, 5]");
    CHECK_EQ_U64(t_params_total(&t, "bn"), 0);
    CHECK_EQ_U64(t_buffer(&t, "bn", "weight"), 4);
    CHECK_EQ_U64(t_buffer(&t, "bn", "bias"), 4);
    CHECK_EQ_U64(t_buffer(&t, "bn", "running_mean"), 4);
    CHECK_EQ_U64(t_buffer(&t, "bn", "running_var"), 4);
    CHECK_EQ_U64(t_saved(&t, "bn"), 16);
    CHECK(!t_saves_storage(&t, "bn", t_storage(&t, "c", 0)));
    CHECK_EQ_U64(t_info(&t, "bn")->work_bytes, 800);
    CHECK(t_out(&t, "bn", 0)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "bn0"), 0);
    CHECK(!t_out(&t, "bn0", 0)->requires_grad);
    t_free(&t);
}

/* Two feature maps [2, 8, 4, 4] and [2, 8, 2, 2] from trainable convs, an
 * RPNHead(8, 3): parameters 8*8*9 + 8 + 3*8 + 3 + 12*8 + 12 = 719, shared by
 * the levels. Forward MACs per level: positions * (8*8*9 + 15*8): 32 * 696
 * + 8 * 696 = 27840; backward: the 3x3 conv's input and weight gradients,
 * the 1x1 convs' (input t and weights): twice the forward. Saved per level:
 * the map and t ([2, 8, 4, 4]: 1024 bytes each; [2, 8, 2, 2]: 256 each):
 * 2560. Backward scratch: two of the largest t, 2048. */
#define MAPS_JSON                                                                              \
    "{'inputs': [{'name': 'img', 'shape': [3, 16, 16]}, {'name': 'a', 'shape': [8, 4, 4]},"    \
    "  {'name': 'b', 'shape': [8, 2, 2]}],"                                                    \
    " 'layers': [{'name': 'p0', 'type': 'conv2d', 'inputs': ['a'], 'out_channels': 8,"         \
    "   'kernel_size': 1},"                                                                    \
    "  {'name': 'p1', 'type': 'conv2d', 'inputs': ['b'], 'out_channels': 8, 'kernel_size': 1},"

static void test_rpnhead(void)
{
    struct t_model t;
    LOAD(&t,
         MAPS_JSON "  {'name': 'h', 'type': 'rpnhead', 'inputs': ['p0', 'p1'], 'num_anchors': 3,"
                   "   'in_channels': 8}]}",
         2);
    CHECK_EQ_INT((int)t_nout(&t, "h"), 4);
    CHECK_STR_EQ(t_shape(&t, "h", 0), "[2, 3, 4, 4]");
    CHECK_STR_EQ(t_shape(&t, "h", 1), "[2, 3, 2, 2]");
    CHECK_STR_EQ(t_shape(&t, "h", 2), "[2, 12, 4, 4]");
    CHECK_STR_EQ(t_shape(&t, "h", 3), "[2, 12, 2, 2]");
    CHECK_EQ_U64(t_params_total(&t, "h"), 719);
    CHECK_EQ_U64(t_param(&t, "h", "conv.0.0.weight"), 576);
    CHECK_EQ_U64(t_param(&t, "h", "bbox_pred.bias"), 12);
    CHECK(t_fwd(&t, "h") == 27840);
    CHECK(t_bwd(&t, "h") == 2 * 27840);
    CHECK_EQ_U64(t_saved(&t, "h"), 2560);
    CHECK(t_saves_storage(&t, "h", t_storage(&t, "p0", 0)));
    CHECK_EQ_U64(t_info(&t, "h")->bwd_work_bytes, 2048);
    t_free(&t);
}

/* The RPN after the head on 16x16 images with maps of 4x4 and 2x2, 3
 * anchors per position: A = (16 + 4) * 3 = 60 per image, anchors [2, 60,
 * 4] (the levels' anchors, 60 * 16 = 960 bytes, the workspace). The
 * objectness [120, 1] and deltas [120, 4] come from trainable linears on
 * inputs [60, 1] and [60, 4]. filter_proposals keeps 50 per image: [2, 50,
 * 4], no grad, workspace (4 + 22 + 4) * 120 * 4 + 60 * 8 = 14880.
 * rpn_compute_loss, batch_size_per_image 16, positive fraction 0.5 (at
 * most 8 positives), 5 positives and 12 samples per image: P = 10, S = 24;
 * saved P*8 + 2*P*4*4 + S*8 + 2*S*4 = 80 + 320 + 192 + 192 = 784;
 * workspace 14 * 120 * 4 = 6720. */
#define RPN_JSON(EXTRA)                                                                        \
    "{'inputs': [{'name': 'img', 'shape': [3, 16, 16]}, {'name': 'a', 'shape': [8, 4, 4]},"    \
    "  {'name': 'b', 'shape': [8, 2, 2]}, {'name': 'o', 'shape': [60, 1]},"                    \
    "  {'name': 'd', 'shape': [60, 4]}],"                                                      \
    " 'layers': [{'name': 'anchors', 'type': 'anchorgenerator', 'inputs': ['img', 'a', 'b']}," \
    "  {'name': 'lo', 'type': 'linear', 'inputs': ['o'], 'out_features': 1},"                  \
    "  {'name': 'obj', 'type': 'flatten', 'start_dim': 0, 'end_dim': -2},"                     \
    "  {'name': 'ld', 'type': 'linear', 'inputs': ['d'], 'out_features': 4},"                  \
    "  {'name': 'del', 'type': 'reshape', 'shape': [-1, 4]},"                                  \
    "  {'name': 'fp', 'type': 'filter_proposals', 'inputs': ['obj', 'del', 'anchors'],"        \
    "   'num_proposals': 50},"                                                                 \
    "  {'name': 'loss', 'type': 'rpn_compute_loss', 'inputs': ['obj', 'del', 'anchors'],"      \
    "   'batch_size_per_image': 16 " EXTRA "}]}"

static void test_rpn(void)
{
    struct t_model t;
    LOAD(&t, RPN_JSON(", 'num_positive': 5, 'num_sampled': 12"), 2);
    CHECK_STR_EQ(t_shape(&t, "anchors", 0), "[2, 60, 4]");
    CHECK(!t_out(&t, "anchors", 0)->requires_grad);
    CHECK_EQ_U64(t_info(&t, "anchors")->work_bytes, 960);
    CHECK_STR_EQ(t_shape(&t, "fp", 0), "[2, 50, 4]");
    CHECK(!t_out(&t, "fp", 0)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "fp"), 0);
    CHECK_EQ_U64(t_info(&t, "fp")->work_bytes, 14880);
    CHECK_EQ_INT((int)t_nout(&t, "loss"), 2);
    CHECK_STR_EQ(t_shape(&t, "loss", 0), "[]");
    CHECK(t_out(&t, "loss", 0)->requires_grad);
    CHECK(t_out(&t, "loss", 1)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "loss"), 784);
    CHECK_EQ_U64(t_info(&t, "loss")->work_bytes, 6720);
    t_free(&t);
    /* the defaults: the most positives (8) and batch_size_per_image samples
     * (16): P = 16, S = 32: 128 + 512 + 256 + 256 */
    LOAD(&t, RPN_JSON(""), 2);
    CHECK_EQ_U64(t_saved(&t, "loss"), 1152);
    t_free(&t);
}

/* The RoI heads on the maps of MAPS_JSON (trainable convs) and 50
 * proposals per image (input [50, 4]): select_training_samples with 16
 * per image gives boxes [32, 4], labels [32] int64, targets [32, 4] (no
 * grad; workspace the proposals, 2*50*4*4 = 1600); multiscaleroialign
 * (7x7, 2 levels): output [32, 8, 7, 7], saved rois [32, 5] float and
 * idx_in_level [32] int64: 640 + 256; workspace 640 + 256 + 32*8*49*4 =
 * 51072; one level: roi_align directly, only the rois saved. A box head
 * linear 392 -> 16, then the predictor's linears to 5 classes and 20 box
 * coordinates; fastrcnn_loss with 3 positives per image (P = 6): saved
 * log_softmax [32, 5] 640, the labels 256, total_weight 4, the two index
 * tensors 2*48, the indexed regression and targets 2*96: 1188. */
#define ROI_JSON(LEVELS, NPOS)                                                                 \
    MAPS_JSON "  {'name': 'props', 'type': 'zeros', 'size': ['batch', 50, 4]},"                \
    "  {'name': 'st', 'type': 'select_training_samples', 'inputs': ['props'],"                 \
    "   'batch_size_per_image': 16},"                                                          \
    "  {'name': 'pool', 'type': 'multiscaleroialign', 'inputs': [" LEVELS ", 'st:0'],"         \
    "   'output_size': 7, 'sampling_ratio': 2},"                                               \
    "  {'name': 'flat', 'type': 'flatten'},"                                                   \
    "  {'name': 'fc', 'type': 'linear', 'out_features': 16},"                                  \
    "  {'name': 'cls', 'type': 'linear', 'out_features': 5},"                                  \
    "  {'name': 'box', 'type': 'linear', 'inputs': ['fc'], 'out_features': 20},"               \
    "  {'name': 'loss', 'type': 'fastrcnn_loss', 'inputs': ['cls', 'box', 'st:1', 'st:2'],"    \
    "   'num_positive': " NPOS "}]}"

static void test_roi_heads(void)
{
    struct t_model t;
    LOAD(&t, ROI_JSON("'p0', 'p1'", "3"), 2);
    CHECK_STR_EQ(t_shape(&t, "st", 0), "[32, 4]");
    CHECK_STR_EQ(t_shape(&t, "st", 1), "[32]");
    CHECK(t_out(&t, "st", 1)->dtype == MEMEST_I64);
    CHECK_STR_EQ(t_shape(&t, "st", 2), "[32, 4]");
    CHECK(!t_out(&t, "st", 0)->requires_grad);
    CHECK_EQ_U64(t_info(&t, "st")->work_bytes, 1600);
    CHECK_STR_EQ(t_shape(&t, "pool", 0), "[32, 8, 7, 7]");
    CHECK(t_out(&t, "pool", 0)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "pool"), 640 + 256);
    CHECK_EQ_U64(t_info(&t, "pool")->work_bytes, 51072);
    CHECK(t_fwd(&t, "pool") == 0);
    CHECK_STR_EQ(t_shape(&t, "loss", 1), "[]");
    CHECK_EQ_U64(t_saved(&t, "loss"), 1188);
    CHECK(t_saves_storage(&t, "loss", t_storage(&t, "st", 1)));
    t_free(&t);

    LOAD(&t, ROI_JSON("'p0'", "0"), 2);
    CHECK_EQ_U64(t_saved(&t, "pool"), 640);
    CHECK_EQ_U64(t_info(&t, "pool")->work_bytes, 640);
    CHECK_EQ_U64(t_saved(&t, "loss"), 640 + 256 + 4);
    t_free(&t);
}

static void test_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t, RPN_JSON(", 'num_positive': 9"), 2),
                   "num_positive 9: the sampler takes at most "
                   "int(batch_size_per_image * positive_fraction) = 8");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, RPN_JSON(", 'num_positive': 4, 'num_sampled': 3"), 2),
                   "num_sampled 3: between num_positive (4) and batch_size_per_image (16)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, ROI_JSON("'p0', 'p1'", "17"), 2),
                   "num_positive 17 per image: more than the 32 RoIs of the batch");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, ROI_JSON("'p0', 'img'", "1"), 2),
                   "input 2: [2, 3, 16, 16], the first feature map is [2, 8, 4, 4]");
    t_free(&t);
}

int main(void)
{
    test_frozenbn();
    test_rpnhead();
    test_rpn();
    test_roi_heads();
    test_errors();
    return CHECK_DONE();
}
