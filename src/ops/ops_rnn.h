/* ops_rnn.h - what ops_rnn.c (shapes, parameters, the native kernels)
 * lends ops_rnn_cudnn.c (cuDNN's _cudnn_rnn): an RNN module's sizes. */
#ifndef MEMEST_OPS_RNN_H
#define MEMEST_OPS_RNN_H

#include "ops_common.h"

enum rnn_cell { RNN_CELL_LSTM, RNN_CELL_GRU, RNN_CELL_RNN };

/* An RNN module's sizes: T steps of B sequences of `in` features, L
 * layers of D directions, hidden size H (Hr of h: proj_size P, else H), G
 * gates (GH = G * H), a layer's output DHr = D * Hr; dropout p between
 * the layers. */
struct rnn {
    enum rnn_cell cell;
    int64_t T, B, in, H, L, P, Hr, GH, DHr;
    int D;
    bool bias, bf;   /* bf: batch_first, with a batched input */
    double p;
    enum memest_dtype dt;
};

/* The tensors _cudnn_rnn saves, its reserve space and workspaces (the
 * module's parameters and outputs declared). Returns 0/-1. */
int memest_rnn_cudnn_saves(struct memest_ictx *c, const struct rnn *R);
/* cuDNN's reserve space and workspace for R, in bytes (saturating): the
 * estimates ops_rnn_cudnn.c documents. */
uint64_t memest_rnn_cudnn_reserve(const struct rnn *R);
uint64_t memest_rnn_cudnn_workspace(const struct rnn *R);

#endif
