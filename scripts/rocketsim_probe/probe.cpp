// RocketSim probe: replays a state file written by rocketrl.diagnostics.rocketsim_probe (the ball, each car's full
// CarState, then each tick's controls) through RocketSim's C++ library one tick at a time, and prints per tick the
// watched car's position, velocity and angular velocity (uu, uu/s, rad/s) and, from tick FROM on, every Bullet
// contact manifold of that car (its points on both bodies in uu, normal, distance, impulses, lifetime, triangle)
// and, with WHEELS set in the environment, its wheels' raycasts and suspension.
//     probe STATE_FILE CAR FROM
// Collision meshes: the folder in ROCKETSIM_MESHES (RocketSim's collision_meshes layout).
#include "RocketSim.h"
#include "BulletCollision/CollisionDispatch/btCollisionDispatcher.h"
#include "BulletCollision/NarrowPhaseCollision/btPersistentManifold.h"
#include <fstream>
#include <cstdio>
using namespace RocketSim;
static Vec rv(std::istream& in) { Vec v; in >> v.x >> v.y >> v.z; return v; }
int main(int argc, char** argv) {
	const char* file = argv[1]; int watch = atoi(argv[2]); int from = atoi(argv[3]);
	const char* meshes = getenv("ROCKETSIM_MESHES");
	if (argc < 4 || !meshes) {
		fprintf(stderr, "usage: ROCKETSIM_MESHES=DIR probe STATE_FILE CAR FROM\n");
		return 2;
	}
	RocketSim::Init(meshes, true);
	Arena* arena = Arena::Create(GameMode::SOCCAR);
	std::ifstream in(file); std::string tag;
	in >> tag; BallState bs; bs.pos = rv(in); bs.vel = rv(in); bs.angVel = rv(in);
	std::vector<Car*> cars;
	int ncars; in >> tag >> ncars;
	for (int c = 0; c < ncars; c++) {
		in >> tag; CarState s; s.pos = rv(in); s.rotMat.forward = rv(in); s.rotMat.right = rv(in); s.rotMat.up = rv(in);
		s.vel = rv(in); s.angVel = rv(in); int b; in >> b; s.isOnGround = b;
		for (int w = 0; w < 4; w++) { in >> b; s.wheelsWithContact[w] = b; }
		in >> b; s.hasJumped = b; in >> b; s.hasDoubleJumped = b; in >> b; s.hasFlipped = b; s.flipRelTorque = rv(in);
		in >> s.jumpTime >> s.flipTime; in >> b; s.isFlipping = b; in >> b; s.isJumping = b;
		in >> s.airTime >> s.airTimeSinceJump >> s.boost >> s.timeSinceBoosted >> s.boostingTime;
		in >> b; s.isSupersonic = b; in >> s.supersonicTime >> s.handbrakeVal; in >> b; s.isAutoFlipping = b;
		in >> s.autoFlipTimer >> s.autoFlipTorqueScale; in >> b; s.worldContact.hasContact = b; s.worldContact.contactNormal = rv(in);
		in >> s.carContact.otherCarID >> s.carContact.cooldownTimer; in >> b; s.isDemoed = b; in >> s.demoRespawnTimer;
		CarControls& lc = s.lastControls; in >> lc.throttle >> lc.steer >> lc.pitch >> lc.yaw >> lc.roll; int bo, ju, hb; in >> bo >> ju >> hb;
		lc.boost = bo; lc.jump = ju; lc.handbrake = hb;
		Car* car = arena->AddCar(c == 0 ? Team::BLUE : Team::ORANGE);
		car->SetState(s); cars.push_back(car);
	}
	arena->ball->SetState(bs);
	int ticks; in >> tag >> ticks;
	auto& objs = arena->_bulletWorld.getCollisionObjectArray();
	for (int t = 0; t < ticks; t++) {
		in >> tag;
		for (int c = 0; c < ncars; c++) {
			CarControls ctl; float j, bo, hb; in >> ctl.throttle >> ctl.steer >> ctl.pitch >> ctl.yaw >> ctl.roll >> j >> bo >> hb;
			ctl.jump = j > 0.5f; ctl.boost = bo > 0.5f; ctl.handbrake = hb > 0.5f; cars[c]->controls = ctl;
		}
		arena->Step(1);
		CarState s = cars[watch]->GetState();
		printf("tick %d pos %.4f %.4f %.4f vel %.3f %.3f %.3f ang %.4f %.4f %.4f\n", t + 1, s.pos.x, s.pos.y, s.pos.z, s.vel.x, s.vel.y, s.vel.z, s.angVel.x, s.angVel.y, s.angVel.z);
		if (t + 1 < from) continue;
		if (getenv("WHEELS")) {
			auto& veh = cars[watch]->_bulletVehicle;
			for (int w = 0; w < veh.m_wheelInfo.size(); w++) {
				auto& wi = veh.m_wheelInfo[w];
				btVector3 p = wi.m_raycastInfo.m_contactPointWS * 50, n = wi.m_raycastInfo.m_contactNormalWS;
				printf("  wheel%d contact %d pt %.3f %.3f %.3f n %.4f %.4f %.4f susp %.4f force %.4f relvel %.4f push %.4f\n", w, (int)wi.m_raycastInfo.m_isInContact, p.x(), p.y(), p.z(), n.x(), n.y(), n.z(), wi.m_raycastInfo.m_suspensionLength * 50, wi.m_wheelsSuspensionForce, wi.m_suspensionRelativeVelocity, wi.m_extraPushback); { btVector3 h = wi.m_raycastInfo.m_hardPointWS * 50; printf("    hard %.4f %.4f %.4f rest %.4f radius %.4f travel %.4f\n", h.x(), h.y(), h.z(), wi.getSuspensionRestLength() * 50, wi.m_wheelsRadius * 50, wi.m_maxSuspensionTravelCm / 100 * 50); }
			}
		}
		auto* d = arena->_bulletWorld.getDispatcher();
		for (int i = 0; i < d->getNumManifolds(); i++) {
			btPersistentManifold* m = d->getManifoldByIndexInternal(i);
			const btCollisionObject* body = &cars[watch]->_rigidBody;
			if (m->getBody0() != body && m->getBody1() != body) continue;
			const btCollisionObject* other = m->getBody0() == body ? m->getBody1() : m->getBody0();
			int idx = -1; for (int k = 0; k < objs.size(); k++) if (objs[k] == other) idx = k;
			printf("  manifold %d %p obj %d shape %d swapped %d n %d\n", i, (void*)m, idx, other->getCollisionShape()->getShapeType(), m->getBody0() != body, m->getNumContacts());
			for (int k = 0; k < m->getNumContacts(); k++) {
				btManifoldPoint& p = m->getContactPoint(k);
				btVector3 a = p.m_positionWorldOnA * 50, b = p.m_positionWorldOnB * 50, n = p.m_normalWorldOnB;
				printf("    pt%d A %.3f %.3f %.3f B %.3f %.3f %.3f n %.4f %.4f %.4f d %.4f imp %.4f lat %.4f %.4f life %d tri %d part %d\n", k, a.x(), a.y(), a.z(), b.x(), b.y(), b.z(), n.x(), n.y(), n.z(), p.m_distance1 * 50, p.m_appliedImpulse, p.m_appliedImpulseLateral1, p.m_appliedImpulseLateral2, p.m_lifeTime, p.m_index1, p.m_partId1);
			}
		}
	}
}
