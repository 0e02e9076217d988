/*
 * orr_halley.h - the Halley API's generated protobuf-c types (halley.pb-c.h,
 * compiled once into orr_halley_pb) under short names, for every client of
 * halleyd: HL(Instance) is Orrery__Halley__V1__Instance, HL_INIT(GET_TASK_REQUEST)
 * its initializer, HL_STATE(RUNNING) an InstanceState and HL_ROLE(ADMIN) a
 * Role value. Macros only; link orr_halley_pb.
 */
#ifndef ORR_HALLEY_H
#define ORR_HALLEY_H

#include "halley.pb-c.h"

#define HL(name)       Orrery__Halley__V1__##name
#define HL_INIT(NAME)  ORRERY__HALLEY__V1__##NAME##__INIT
#define HL_STATE(NAME) ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_##NAME
#define HL_ROLE(NAME)  ORRERY__HALLEY__V1__ROLE__ROLE_##NAME

#endif
